// See live_page.h.
#include "execution/live/live_page.h"

#include <cstdio>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "execution/live/http_endpoint.h"
#include "execution/live/live_model.h"
#include "execution/report/page_html.h"
#include "execution/report/svg.h"

namespace rayorch::detail {
namespace {

std::string random_hex(std::size_t bytes) {
  std::random_device device;
  std::string out;
  for (std::size_t i = 0; i < bytes; ++i) out += fmt::format("{:02x}", device() & 0xffU);
  return out;
}

// Fetches the page again every second and swaps its body in; when the endpoint is gone (the
// run ended) it says so and stops. The fetched page is parsed, never run: DOMParser runs no
// script, and the one script of the page is this one. body's data-redraws counts the swaps.
constexpr const char* kRedrawScript =
    "(function(){var redraws=0;function ended(why){var s=document.getElementById('live-status');"
    "s.textContent='The run has ended ('+why+'): this is its last picture; the report page "
    "has the whole run.';s.className='ended';}"
    "function poll(){fetch(location.href,{cache:'no-store'}).then(function(r){"
    "if(!r.ok)throw new Error('HTTP '+r.status);return r.text();}).then(function(t){"
    "var d=new DOMParser().parseFromString(t,'text/html');var p=d.getElementById('page');"
    "if(!p)throw new Error('not a live page');"
    "document.getElementById('page').innerHTML=p.innerHTML;"
    "document.body.setAttribute('data-redraws',++redraws);setTimeout(poll,1000);})"
    ".catch(function(e){ended(e.message);});}setTimeout(poll,1000);})();";

std::string now_html(const LiveSnapshot& s) {
  std::string out =
      fmt::format("<h2>Now</h2><p id='now-parents'>{} of {}{} parents delivered{}</p>",
                  s.report.roots_delivered, s.roots_total, s.total_known ? "" : "+",
                  s.ended ? " (the run has ended)" : "");
  out +=
      "<table id='now-calls'><tr><th>Call</th><th>done</th><th>waiting</th>"
      "<th>running</th></tr>";
  for (const CallNow& c : s.calls) {
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", escape_html(c.call),
                       c.done, c.ready, c.in_flight);
  }
  out +=
      "</table><table id='now-pools'><tr><th>pool</th><th>actors</th><th>ready</th>"
      "<th>failed to start</th></tr>";
  for (const PoolNow& p : s.pools) {
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", escape_html(p.pool),
                       p.actors, p.ready, p.failed);
  }
  return out + "</table>";
}

bool same_token(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned diff = 0;  // every byte compared, so the time taken says nothing about the token
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  }
  return diff == 0;
}

class LivePage final : public RunObserver {
 public:
  explicit LivePage(const LiveOptions& options)
      : token_(!options.token.empty()           ? options.token
               : is_loopback_host(options.host) ? ""
                                                : random_hex(16)) {
    endpoint_.emplace(options.host, options.port,
                      [this](const HttpRequest& r) { return answer(r); });
    std::string url = fmt::format("http://{}:{}/", options.host, endpoint_->port());
    if (!token_.empty()) url += "?token=" + token_;
    if (options.on_listen) {
      options.on_listen(url);
    } else {
      std::fprintf(stderr, "live page: %s\n", url.c_str());
    }
  }

  void on_run_start(const RunStartEvent& e) override { model_.run_start(e); }
  void on_rpc(const RpcEvent& e) override { model_.rpc(e); }
  void on_actor_start(const ActorStartEvent& e) override { model_.actor_start(e); }
  void on_pool_resize(const PoolResizeEvent& e) override { model_.pool_resize(e); }
  void on_root(const RootEvent& e) override { model_.root(e); }
  void on_progress(const ProgressEvent& e) override { model_.progress(e); }
  void on_run_end(const RunEndEvent& e) override {
    model_.end(e.aborted, e.error);
    endpoint_.reset();  // the page lives as long as the run: nothing listens after it
  }

 private:
  HttpResponse answer(const HttpRequest& request) const {
    if (!token_.empty()) {
      const auto it = request.query.find("token");
      const std::string given = it != request.query.end() ? it->second
                                : request.authorization.rfind("token ", 0) == 0
                                    ? request.authorization.substr(6)
                                    : "";
      if (!same_token(given, token_)) {
        return {403, "text/plain; charset=utf-8",
                "this live page needs the token printed when the run started: open the URL "
                "printed then (?token=...)\n"};
      }
    }
    if (request.path != "/") return {404, "text/plain; charset=utf-8", "only / is served\n"};
    const LiveSnapshot s = model_.snapshot();
    const LivePageParts parts{random_hex(12), kRedrawScript, now_html(s)};
    return {200, "text/html; charset=utf-8",
            report_page_html(s.report, s.ended ? "ended run" : "running", &parts)};
  }

  const std::string token_;
  LiveModel model_;
  std::optional<HttpEndpoint> endpoint_;  // last: it serves from model_ until it is reset
};

}  // namespace

std::shared_ptr<RunObserver> make_live_page(const LiveOptions& options) {
  return std::make_shared<LivePage>(options);
}

}  // namespace rayorch::detail
