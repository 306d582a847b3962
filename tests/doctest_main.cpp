// ctest runs each case by its name (doctest_discover_tests: --test-case=NAME). A name that
// selects nothing (CMake splits a name at ';', or the case was renamed) would pass as
// "0 test cases" without running anything; such a run fails here instead.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>
#include <string_view>

namespace {

int g_selected_cases = -1;

//! Counts the test cases the filters select; reports nothing.
struct SelectedCases : doctest::IReporter {
  explicit SelectedCases(const doctest::ContextOptions& /*options*/) {}
  void report_query(const doctest::QueryData& /*data*/) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    g_selected_cases = static_cast<int>(stats.numTestCasesPassingFilters);
  }
  void test_case_start(const doctest::TestCaseData& /*data*/) override {}
  void test_case_reenter(const doctest::TestCaseData& /*data*/) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& /*stats*/) override {}
  void test_case_exception(const doctest::TestCaseException& /*e*/) override {}
  void subcase_start(const doctest::SubcaseSignature& /*signature*/) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& /*data*/) override {}
  void log_message(const doctest::MessageData& /*data*/) override {}
  void test_case_skipped(const doctest::TestCaseData& /*data*/) override {}
};

}  // namespace

DOCTEST_REGISTER_LISTENER("selected_cases", 0, SelectedCases);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;
  bool by_name = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    by_name = by_name || arg.starts_with("--test-case=") || arg.starts_with("-tc=");
  }
  if (rc == 0 && by_name && g_selected_cases == 0) {
    std::cerr << "doctest_main: the --test-case filter selects no test case (a name with ';', which CMake splits, "
                 "or a renamed case): nothing was tested\n";
    return 1;
  }
  return rc;
}
