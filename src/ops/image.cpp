// image family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_image_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx
