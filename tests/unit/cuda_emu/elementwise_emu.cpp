// providers/cuda/elementwise.cu compiled as C++ over the emulator (providers/cuda/dialect.hpp).
#include "elementwise.cu"
