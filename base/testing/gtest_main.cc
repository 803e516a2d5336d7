// The main of every test binary: GoogleTest's, with SIGPIPE ignored first as in every other
// main of the project (base/sigpipe.h). Tests that need the default disposition restore it.
#include "base/sigpipe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  testing::InitGoogleMock(&argc, argv);
  return RUN_ALL_TESTS();
}
