// providers/cuda/elementwise.cu compiled as C++ over the emulator (providers/cuda/dialect.hpp),
// and quant.cu (the int8 kernels) beside it in the same translation unit.
#include "elementwise.cu"
#include "quant.cu"
