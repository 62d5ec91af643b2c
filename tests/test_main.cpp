// Catch2 main for every test executable. A run whose filters match no test case fails (Catch's
// NoTests warning): ctest splits a test name at ';' into two filters that match nothing, and
// Catch alone would report that as a pass.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

int main(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  Catch::ConfigData& config = session.configData();
  config.warnings = static_cast<Catch::WarnAbout::What>(config.warnings | Catch::WarnAbout::NoTests);
  return session.run();
}
