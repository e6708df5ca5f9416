// onyx: an ONNX inference runtime built around execution providers. Include this header.
#pragma once

#include "onyx/custom_op.hpp"
#include "onyx/dtype.hpp"
#include "onyx/error.hpp"
#include "onyx/logging.hpp"
#include "onyx/session.hpp"
#include "onyx/shape.hpp"
#include "onyx/tensor.hpp"
#include "onyx/tensor_io.hpp"
#include "onyx/generate.hpp"
#include "onyx/version.hpp"
