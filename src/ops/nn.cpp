// nn family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_nn_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx
