#pragma once
// The benchmark's outputs: a vLLM-style text summary per run, JSON (per request and summary)
// and a Markdown table comparing the endpoints.
#include <string>
#include <vector>

#include "bench/serve.h"

namespace sandwich::bench {

std::string rate_label(double rate);       // "all at once" for an unlimited rate, else %g
std::string rate_with_unit(double rate);   // "all at once", or e.g. "2 req/s"
std::string rate_file_label(double rate);  // "inf", or %g: for file names and JSON
std::string ms_label(double ms);           // "200 ms", or "2.5 s" from 1000 ms on

std::string format_run_summary(const RunReport& run, double attainment_target);
std::string markdown_report(const ServeReport& report);
// Per-request records and the summary of one run, as JSON text.
std::string run_json(const RunReport& run);
// Options, every run's summary, attainment curves and goodput, as JSON text.
std::string summary_json(const ServeReport& report);

// Writes <label>_rate-<r>.json for each run, summary.json and report.md under dir (created);
// returns the paths. Throws std::runtime_error when a file cannot be written.
std::vector<std::string> write_report_files(const ServeReport& report, const std::string& dir);

}  // namespace sandwich::bench
