// linalg family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_linalg_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx
