#include <gtest/gtest.h>

#include "onyx/onyx.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  onyx::set_log_level(onyx::LogLevel::kError);
  return RUN_ALL_TESTS();
}
