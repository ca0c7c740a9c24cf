// The conversion driver's untyped steps. See convert_driver.h.
#include "common/convert_driver.h"

#include "common/output.h"

namespace workloads {

PreparedOutput prepare_output_dir(const std::filesystem::path& out, const std::string& given,
                                  const ConvertNaming& naming, bool resume, bool journal) {
  create_output_dir(out, given, naming.probe_prefix);
  // Locked before anything in it changes: the temporaries may be another run's live ones.
  PreparedOutput prepared{OutputLock(out, std::string(naming.report_name)), ""};
  remove_stale_temporaries(out.string(), naming.temp_infix);
  prepared.journal_path = prepare_run_journal(out, naming.journal_name, resume, journal);
  return prepared;
}

InputError unusable_run_files(const std::invalid_argument& e, const std::string& journal_path,
                              const ConvertNaming& naming) {
  if (std::string_view(e.what()).find("another pipeline") != std::string_view::npos) {
    return InputError(
        fmt::format("cannot resume: the run journal {} was written by another version of the "
                    "pipeline; rerun without --resume to {}",
                    journal_path, naming.redo));
  }
  return InputError(e.what());
}

}  // namespace workloads
