# The test executables and their CTest registrations (included by the root CMakeLists.txt,
# so PROJECT_SOURCE_DIR and the targets defined there are in scope).

if(BUILD_TESTING)
  # One executable per *_test.cc file under tests/, so a test file builds and runs on its own.
  # The tests mirror the sources (tests/runtime/rule_reduce_test.cc tests src/runtime/
  # rule_reduce.cc); a test's target is its path under tests/ with '/' as '_'
  # (tests/runtime/rule_reduce_test.cc: cmake --build build --target runtime_rule_reduce_test),
  # unique by construction. Shared test
  # helpers live in tests/support/ and are header-only.
  file(GLOB_RECURSE RAYORCH_TEST_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/*_test.cc)
  # tests/package/ is a separate project built against the installed package, and
  # tests/diagnostics/ holds programs that must not compile.
  list(FILTER RAYORCH_TEST_SOURCES EXCLUDE REGEX "/tests/(package|diagnostics)/")
  # A workload's tests are built only with the workload, the benchmarks' with the benchmarks.
  if(NOT RAYORCH_WITH_PDF2MD)
    list(FILTER RAYORCH_TEST_SOURCES EXCLUDE REGEX "/tests/workloads/pdf2md/")
  endif()
  if(NOT RAYORCH_WITH_VIDEO)
    list(FILTER RAYORCH_TEST_SOURCES EXCLUDE REGEX "/tests/workloads/video/")
  endif()
  if(NOT (RAYORCH_WITH_PDF2MD OR RAYORCH_WITH_VIDEO))
    list(FILTER RAYORCH_TEST_SOURCES EXCLUDE REGEX "/tests/workloads/common/")
  endif()
  if(NOT TARGET rayorch_bench)
    list(FILTER RAYORCH_TEST_SOURCES EXCLUDE REGEX "/tests/bench/")
  endif()
  foreach(test_source IN LISTS RAYORCH_TEST_SOURCES)
    file(RELATIVE_PATH test_path ${PROJECT_SOURCE_DIR}/tests ${test_source})
    string(REGEX REPLACE "\\.cc$" "" test_name ${test_path})
    string(REPLACE "/" "_" test_name ${test_name})
    get_filename_component(test_dir ${test_path} DIRECTORY)
    add_executable(${test_name} ${test_source})
    target_include_directories(${test_name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
    target_link_libraries(${test_name} PRIVATE
      rayorch::rayorch
      GTest::gtest
      GTest::gtest_main
      nlohmann_json::nlohmann_json)
    if(TARGET GTest::gmock)
      target_link_libraries(${test_name} PRIVATE GTest::gmock)
    endif()
    rayorch_apply_project_settings(${test_name})
    # A test's own code is compiled for build time: lightly optimised, line tables only
    # (enough for backtraces). Most of CI's compile time is the test files; the library they
    # test, the workloads and the benchmarks keep the build type's flags.
    target_compile_options(${test_name} PRIVATE $<$<CONFIG:RelWithDebInfo>:-O1 -g1>)
    if(test_dir MATCHES "^bench(/|$)")
      target_link_libraries(${test_name} PRIVATE rayorch_bench)
    elseif(test_dir MATCHES "^workloads/pdf2md(/|$)")
      target_link_libraries(${test_name} PRIVATE rayorch_pdf2md)
    elseif(test_dir MATCHES "^workloads/video(/|$)")
      target_link_libraries(${test_name} PRIVATE rayorch_video PkgConfig::RAYORCH_FFMPEG)
    elseif(test_dir MATCHES "^workloads/common(/|$)")
      target_link_libraries(${test_name} PRIVATE rayorch_workload_common)
    endif()
    # A workload's end-to-end tests run the command in a child process (kill -9, crashes, exit
    # codes).
    if(test_dir MATCHES "^workloads/(pdf2md|video)(/|$)" AND TARGET rayorch_cli)
      add_dependencies(${test_name} rayorch_cli)
      target_compile_definitions(${test_name} PRIVATE
        RAYORCH_CLI_PATH="$<TARGET_FILE:rayorch_cli>")
    endif()
    # `make sanitize` runs the tests labelled `sanitize`: the executor and runtime tests,
    # small enough to stay quick under ASan/UBSan or TSan.
    set(test_properties TIMEOUT 300)
    if(test_name MATCHES
       "^(execution_local_executor_[a-z]+_test|runtime_(engine_grains|\
rule_(call_input|expand|filter|reduce|broadcast)|scenarios_(shapes|failures|aborts|schedule)|\
recovery_(policies|losses))_test|smoke_test)$")
      list(APPEND test_properties LABELS sanitize)
    endif()
    gtest_discover_tests(${test_name}
      DISCOVERY_TIMEOUT 60
      PROPERTIES ${test_properties})
  endforeach()

  if(TARGET example_quickstart)
    add_test(NAME example_quickstart COMMAND example_quickstart)
    set_tests_properties(example_quickstart PROPERTIES
      PASS_REGULAR_EXPRESSION "page 0page 1page 2\npage 0\n\n"
      TIMEOUT 60)
  endif()
  if(TARGET example_pipeline_struct)
    add_test(NAME example_pipeline_struct COMMAND example_pipeline_struct)
    set_tests_properties(example_pipeline_struct PROPERTIES
      PASS_REGULAR_EXPRESSION "first: A B C\nempty:\nthird: ONLY\n"
      TIMEOUT 60)
  endif()

  # API misuse fails to compile with one short, precise message (tests/diagnostics/check.sh
  # states the bound), compiled with this build's compiler and fmt's headers.
  add_test(NAME diagnostics
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/diagnostics/check.sh
      ${CMAKE_CXX_COMPILER} ${PROJECT_SOURCE_DIR}
      "--includes=$<TARGET_PROPERTY:fmt::fmt,INTERFACE_INCLUDE_DIRECTORIES>")
  set_tests_properties(diagnostics PROPERTIES TIMEOUT 300)

  # Installs this build into a scratch prefix and builds a consumer against it.
  add_test(NAME package_consumer
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/package/run.sh
      ${PROJECT_BINARY_DIR}
      ${PROJECT_SOURCE_DIR}/tests/package/consumer
      ${CMAKE_CXX_COMPILER}
      ${CMAKE_GENERATOR}
      ${CMAKE_BUILD_TYPE}
      "${RAYORCH_SANITIZE}")
  set_tests_properties(package_consumer PROPERTIES TIMEOUT 600)

  # The report page in headless chromium (tests/browser/report_page.sh): drawn from a pdf2md
  # run's report, checked from the DOM, its screenshot kept in test-artifacts/.
  if(RAYORCH_WITH_PDF2MD AND TARGET rayorch_cli)
    add_test(NAME browser_report_page
      COMMAND bash ${PROJECT_SOURCE_DIR}/tests/browser/report_page.sh
        $<TARGET_FILE:rayorch_cli> ${PROJECT_BINARY_DIR}/test-artifacts)
    set_tests_properties(browser_report_page PROPERTIES TIMEOUT 300)
  endif()
  # The live page in headless chromium (tests/browser/live_page.sh), over a run it steps
  # through (tests/browser/live_page_run.cc).
  add_executable(live_page_run ${PROJECT_SOURCE_DIR}/tests/browser/live_page_run.cc)
  target_link_libraries(live_page_run PRIVATE rayorch::rayorch)
  rayorch_apply_project_settings(live_page_run)
  add_test(NAME browser_live_page
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/browser/live_page.sh
      $<TARGET_FILE:live_page_run> ${PROJECT_BINARY_DIR}/test-artifacts)
  set_tests_properties(browser_live_page PROPERTIES TIMEOUT 300)

  # Module layering: program <- runtime <- execution; public headers stand alone.
  add_test(NAME layering
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/layering/check.sh ${PROJECT_SOURCE_DIR})
  add_test(NAME layering_selftest
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/layering/selftest.sh
      ${PROJECT_SOURCE_DIR}/tests/layering/check.sh)
  set_tests_properties(layering layering_selftest PROPERTIES TIMEOUT 60)

  # Every "DESIGN x.y" citation in tracked files names a heading of docs/DESIGN.md. The
  # sources cite it about 90 times; --min keeps a pattern that stopped matching from passing.
  add_test(NAME design_refs
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/docs/design_refs.sh --min 60 ${PROJECT_SOURCE_DIR})
  add_test(NAME design_refs_selftest
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/docs/selftest.sh
      ${PROJECT_SOURCE_DIR}/tests/docs/design_refs.sh)
  set_tests_properties(design_refs design_refs_selftest PROPERTIES TIMEOUT 60)

  # Every repository path that docs/*.md, README.md and python/README.md name exists. They
  # name about 215; --min keeps a pattern that stopped matching from passing.
  add_test(NAME doc_paths
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/docs/doc_paths.sh --min 180 ${PROJECT_SOURCE_DIR})
  add_test(NAME doc_paths_selftest
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/docs/doc_paths_selftest.sh
      ${PROJECT_SOURCE_DIR}/tests/docs/doc_paths.sh)
  set_tests_properties(doc_paths doc_paths_selftest PROPERTIES TIMEOUT 60)
endif()
