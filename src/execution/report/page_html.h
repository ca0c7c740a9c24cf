// The page drawn from a report model: the report page (rayorch/report_page.h) and, with the
// live parts, the live page (execution/live/live_page.h).
#pragma once

#include <string>
#include <string_view>

#include "execution/report/report_model.h"

namespace rayorch::detail {

/// What the live page adds to the report page.
struct LivePageParts {
  std::string nonce;     ///< the one script's Content-Security-Policy nonce (fresh per page)
  std::string script;    ///< the script that redraws the page (not escaped: the engine's own)
  std::string now_html;  ///< where the run stands now (built with escape_html)
};

/// The page of `m`; `source` names it. `live` null: the report page, with no script.
std::string report_page_html(const ReportModel& m, std::string_view source,
                             const LivePageParts* live);

}  // namespace rayorch::detail
