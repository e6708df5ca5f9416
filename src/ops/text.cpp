// text family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_text_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx
