// quant family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_quant_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx
