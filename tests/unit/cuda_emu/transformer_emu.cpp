// providers/cuda/transformer.cu compiled as C++ over the emulator (providers/cuda/dialect.hpp).
#include "transformer.cu"
