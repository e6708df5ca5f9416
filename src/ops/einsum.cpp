// einsum family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_einsum_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx
