// random family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_random_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx
