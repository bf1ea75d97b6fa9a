// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include <arrow/compute/initialize.h>
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!arrow::compute::Initialize().ok()) return 1;
  return RUN_ALL_TESTS();
}
