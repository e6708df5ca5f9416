// signal family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_signal_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx
