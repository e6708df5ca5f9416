// providers/cuda/reduce.cu compiled as C++ over the emulator (providers/cuda/dialect.hpp).
#include "reduce.cu"
