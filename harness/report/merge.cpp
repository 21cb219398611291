// merge.cpp — shard records and `harness --merge` (see merge.hpp).
#include "merge.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "check_json.hpp"
#include "compare.hpp"
#include "errors.hpp"
#include "report.hpp"
#include "trial.hpp"

namespace nvfp4 {

namespace {

// ---- the shard record ----

Json record_backends_json(const std::vector<ShardRecord::Backend>& backends, bool owned) {
  Json out = Json::array();
  for (const auto& b : backends) {
    Json m = {{"name", b.name}, {"suite", b.suite}};
    if (owned) m["cases"] = b.owned;
    out.push_back(std::move(m));
  }
  return out;
}

// One input of a merge: a shard report and what its record says.
struct Shard {
  const JsonValue* report = nullptr;
  std::string file;
  ShardSpec spec;
  std::string verify;
  std::vector<ShardRecord::Backend> backends;
};

// A parsed value as JSON text (JsonValue::text() writes a string unquoted).
std::string value_text(const JsonValue& v) { return json_text(to_json(v)); }

int integer(const JsonValue& v, const std::string& what) {
  const double x = v.number();
  if (x != std::floor(x) || x < 0 || x > 1e9) throw InputError(what + " is not a non-negative integer");
  return int(x);
}

std::vector<std::string> strings(const JsonValue& v) {
  std::vector<std::string> out;
  for (const auto& s : v.items()) out.push_back(s.str());
  return out;
}

Shard read_shard(const JsonValue& r, const std::string& file) {
  if (!r.is_object()) throw InputError(file + " is not a harness report (not a JSON object)");
  if (is_bench_report(r)) throw InputError(file + " is a bench report; --merge combines --verify reports");
  const std::string mode = r.str_or("mode", "");
  if (mode == "bisect")
    throw InputError(file + " is a bisect report; a bisect needs every case, so it is run unsharded, not merged");
  if (mode != "verify") throw InputError(file + " is not a harness --verify report (mode '" + mode + "')");
  if (const JsonValue* schema = r.find("schema"); schema && !(schema->is_number() && schema->number() == kReportSchema))
    throw InputError(file + " has report schema " + schema->text() + "; this harness reads schema " +
                     std::to_string(kReportSchema));
  const JsonValue* rec = r.find("shard");
  if (!rec || !rec->is_object()) throw InputError(file + " has no shard record (run each part with --shard I/N)");
  if (!rec->find("index")) throw InputError(file + " is a merged report, not the report of one shard");
  Shard s;
  s.report = &r;
  s.file = file;
  try {
    s.spec.count = integer(rec->at("count"), "shard count");
    s.spec.index = integer(rec->at("index"), "shard index");
    if (s.spec.count < 1 || s.spec.index >= s.spec.count)
      throw InputError("shard " + s.spec.str() + " is not 0 <= I < N");
    s.verify = rec->at("verify").str();
    for (const auto& b : rec->at("backends").items())
      s.backends.push_back({b.at("name").str(), strings(b.at("suite")), strings(b.at("cases"))});
    r.at("options").members();
    r.at("trials").items();
    r.at("cases").items();
    r.at("backends").items();
  } catch (const InputError& e) {
    throw InputError(file + ": malformed shard report: " + e.what());
  }
  return s;
}

// Names what makes `b` a part of another run than `a`, or "".
std::string difference(const Shard& a, const Shard& b) {
  if (a.spec.count != b.spec.count)
    return "different shard counts (" + a.spec.str() + " and " + b.spec.str() + ")";
  if (a.verify != b.verify) return "different --verify (" + a.verify + " and " + b.verify + ")";
  const JsonValue &oa = a.report->at("options"), &ob = b.report->at("options");
  for (const auto& m : oa.members()) {
    const JsonValue* other = ob.find(m.first);
    if (!other || value_text(*other) != value_text(m.second))
      return "different trial options (" + m.first + ": " + value_text(m.second) + " and " +
             (other ? value_text(*other) : "absent") + ")";
  }
  if (ob.members().size() != oa.members().size()) return "different trial options";
  std::string na, nb;
  for (const auto& x : a.backends) na += (na.empty() ? "" : ",") + x.name;
  for (const auto& x : b.backends) nb += (nb.empty() ? "" : ",") + x.name;
  if (na != nb) return "different backends (" + na + " and " + nb + ")";
  for (size_t i = 0; i < a.backends.size(); ++i)
    if (a.backends[i].suite != b.backends[i].suite)
      return "different case lists for backend " + a.backends[i].name + " (--shape/--dist/--seed/--inputs)";
  return "";
}

const Outcome kOrder[] = {Outcome::Pass, Outcome::Fail, Outcome::Error, Outcome::Crash,
                          Outcome::Timeout, Outcome::Skip, Outcome::Blocked};

}  // namespace

std::string add_shard_record(const std::string& report, const ShardRecord& record) {
  const JsonValue r = JsonValue::parse(report);
  const Json rec = {{"index", record.shard.index},
                    {"count", record.shard.count},
                    {"verify", record.verify},
                    {"backends", record_backends_json(record.backends, true)}};
  Json out = Json::object();
  for (const auto& kv : r.members()) {
    out[kv.first] = to_json(kv.second);
    if (kv.first == "options") out["shard"] = rec;
  }
  if (!out.contains("shard")) out["shard"] = rec;
  return json_text(out) + "\n";
}

MergedReport merge_reports(const std::vector<JsonValue>& reports, const std::vector<std::string>& names,
                           const std::string& command) {
  if (reports.empty()) throw InputError("--merge needs the shard reports to merge");
  std::vector<Shard> shards;
  for (size_t i = 0; i < reports.size(); ++i) shards.push_back(read_shard(reports[i], names.at(i)));

  // One run, every shard exactly once.
  for (const auto& s : shards)
    if (const std::string d = difference(shards.front(), s); !d.empty())
      throw InputError(shards.front().file + " and " + s.file + " are shards of different runs: " + d);
  const int count = shards.front().spec.count;
  std::vector<const Shard*> by_index(size_t(count), nullptr);
  for (const auto& s : shards) {
    const Shard*& slot = by_index[size_t(s.spec.index)];
    if (slot)
      throw InputError("overlapping shards: " + slot->file + " and " + s.file + " are both shard " + s.spec.str());
    slot = &s;
  }
  std::string missing;
  for (int i = 0; i < count; ++i)
    if (!by_index[size_t(i)]) missing += (missing.empty() ? "" : ", ") + ShardSpec{i, count}.str();
  if (!missing.empty()) throw InputError("missing shard " + missing + ": a merge needs all " + std::to_string(count));

  // Owned cases: disjoint, inside the suite, covering it.
  const auto& suites = shards.front().backends;
  std::map<std::pair<std::string, std::string>, const Shard*> owner;  // (backend, case) -> shard
  std::map<std::string, std::map<std::string, size_t>> position;    // backend -> case -> suite index
  for (const auto& b : suites)
    for (size_t i = 0; i < b.suite.size(); ++i) position[b.name].emplace(b.suite[i], i);
  for (const Shard* s : by_index)
    for (const auto& b : s->backends)
      for (const auto& c : b.owned) {
        if (!position[b.name].count(c))
          throw InputError(s->file + " owns case '" + c + "' of backend " + b.name + ", which is not in its suite");
        auto [it, fresh] = owner.emplace(std::make_pair(b.name, c), s);
        if (!fresh)
          throw InputError("overlapping shards: case '" + c + "' of backend " + b.name + " is in both " +
                           it->second->file + " and " + s->file);
      }
  for (const auto& b : suites)
    for (const auto& c : b.suite)
      if (!owner.count({b.name, c}))
        throw InputError("missing cases: '" + c + "' of backend " + b.name + " is in no shard report");

  // Trials: each on a case its shard owns, none twice, every combination on every owned case.
  struct Trial {
    const JsonValue* json;
    std::string backend, combo, c;
  };
  std::map<std::string, const Shard*> seen;  // "backend combo case" -> shard
  std::vector<std::pair<std::string, std::string>> keys;  // (backend, combo), first-seen order
  std::map<std::pair<std::string, std::string>, std::vector<Trial>> groups;
  for (const Shard* s : by_index) {
    int n = 0;
    for (const auto& t : s->report->at("trials").items()) {
      ++n;
      Trial tr{&t, t.str_or("backend", ""), t.str_or("combo", ""), ""};
      try {
        tr.c = trial_case_name(t);
      } catch (const InputError& e) {
        throw InputError(s->file + ": malformed trial " + std::to_string(n) + ": " + e.what());
      }
      Outcome o;
      if (!outcome_of(t.str_or("outcome", ""), o))
        throw InputError(s->file + ": trial " + std::to_string(n) + " has no known outcome");
      const auto own = owner.find({tr.backend, tr.c});
      if (own == owner.end() || own->second != s)
        throw InputError(s->file + " has a trial outside its shard: " + tr.backend + " " + tr.combo + " " + tr.c);
      const std::string name = tr.backend + " " + tr.combo + " " + tr.c;
      auto [it, fresh] = seen.emplace(name, s);
      if (!fresh) throw InputError("duplicate trial " + name + " in " + s->file);
      const auto key = std::make_pair(tr.backend, tr.combo);
      if (!groups.count(key)) keys.push_back(key);
      groups[key].push_back(tr);
    }
  }
  for (const auto& k : keys)
    for (const Shard* s : by_index)
      for (const auto& b : s->backends)
        if (b.name == k.first)
          for (const auto& c : b.owned)
            if (!seen.count(k.first + " " + k.second + " " + c))
              throw InputError(s->file + " is incomplete: it lacks the trial " + k.first + " " + k.second + " " + c);

  // The merged report, member by member in report_json's order.
  Json trials = Json::array();
  std::map<Outcome, int> total;
  int exit_code = 125;
  double elapsed = 0, overhead = 0;
  for (const Shard* s : by_index) elapsed += s->report->number_or("elapsed_s", 0);
  for (const auto& k : keys) {
    auto& g = groups[k];
    std::stable_sort(g.begin(), g.end(), [&](const Trial& a, const Trial& b) {
      return position[k.first][a.c] < position[k.first][b.c];
    });
    for (const auto& t : g) {
      Json trial = to_json(*t.json);
      if (trial.contains("index")) trial["index"] = trials.size() + 1;
      trials.push_back(std::move(trial));
      overhead += t.json->number_or("overhead_s", 0);
      Outcome o = Outcome::Skip;
      outcome_of(t.json->str_or("outcome", ""), o);
      ++total[o];
      if (is_failure(o)) exit_code = 1;
      else if (o == Outcome::Pass && exit_code == 125) exit_code = 0;
    }
  }
  // Cases in suite order (backends in order), each once.
  std::map<std::string, size_t> canonical;
  for (const auto& b : suites)
    for (const auto& c : b.suite) canonical.emplace(c, canonical.size());
  std::vector<std::pair<size_t, const JsonValue*>> cases;
  std::set<std::string> case_seen;
  for (const Shard* s : by_index)
    for (const auto& c : s->report->at("cases").items()) {
      const std::string name = c.str_or("name", "");
      if (!case_seen.insert(name).second) continue;
      const auto it = canonical.find(name);
      cases.push_back({it == canonical.end() ? canonical.size() : it->second, &c});
    }
  std::stable_sort(cases.begin(), cases.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Json case_list = Json::array();
  for (const auto& c : cases) case_list.push_back(to_json(*c.second));
  // Backends: each once; an entry where it was available is preferred.
  std::vector<std::string> backend_order;
  std::map<std::string, const JsonValue*> backend;
  for (const Shard* s : by_index)
    for (const auto& b : s->report->at("backends").items()) {
      const std::string name = b.str_or("name", "?");
      const JsonValue* avail = b.find("available");
      const bool ok = avail && avail->is_bool() && avail->boolean();
      if (!backend.count(name)) backend_order.push_back(name);
      if (!backend.count(name) || ok) backend[name] = &b;
    }
  Json backends = Json::array();
  for (const auto& n : backend_order) backends.push_back(to_json(*backend[n]));
  Json verdicts = Json::array();
  std::vector<std::string> files;
  for (const Shard* s : by_index) {
    files.push_back(s->file);
    if (const JsonValue* v = s->report->find("verdicts"); v && v->is_array())
      for (const auto& x : v->items()) verdicts.push_back(to_json(x));
  }
  Json summary = Json::object();
  for (Outcome o : kOrder) summary[outcome_name(o)] = total[o];
  // The shards' reference caches and comparisons, each count summed (the first shard's directory;
  // the first rejection any shard reported). Reports written before these members have none.
  Json cache = Json::object(), comparisons = Json::object();
  {
    bool enabled = false;
    std::string dir, first_rejection;
    std::map<std::string, int64_t> counts, compared;
    for (const Shard* s : by_index) {
      if (const JsonValue* rc = s->report->find("reference_cache")) {
        const JsonValue* on = rc->find("enabled");
        if (!on || !on->is_bool() || !on->boolean()) continue;
        if (!enabled) dir = rc->str_or("dir", "");
        enabled = true;
        for (const char* k : {"hits", "computed", "rejected", "write_failures", "evicted"})
          counts[k] += int64_t(rc->number_or(k, 0));
        if (first_rejection.empty()) first_rejection = rc->str_or("first_rejection", "");
      }
      if (const JsonValue* c = s->report->find("comparisons"))
        for (const char* k : {"scanned", "reused"}) compared[k] += int64_t(c->number_or(k, 0));
    }
    cache["enabled"] = enabled;
    if (enabled) {
      cache["dir"] = dir;
      for (const char* k : {"hits", "computed", "rejected", "write_failures", "evicted"}) cache[k] = counts[k];
      if (!first_rejection.empty()) cache["first_rejection"] = first_rejection;
    }
    for (const char* k : {"scanned", "reused"}) comparisons[k] = compared[k];
  }

  const JsonValue& first = *by_index.front()->report;
  Json doc;
  doc["schema"] = kReportSchema;
  doc["tool"] = to_json(first.at("tool"));
  doc["mode"] = "verify";
  doc["command"] = command;
  doc["exit_code"] = exit_code;
  doc["elapsed_s"] = elapsed;
  doc["overhead_s"] = overhead;
  doc["reference_cache"] = std::move(cache);
  doc["comparisons"] = std::move(comparisons);
  doc["options"] = to_json(first.at("options"));
  doc["shard"] = {{"count", count},
                  {"merged_from", files},
                  {"verify", by_index.front()->verify},
                  {"backends", record_backends_json(suites, false)}};
  doc["backends"] = std::move(backends);
  doc["cases"] = std::move(case_list);
  doc["trials"] = std::move(trials);
  doc["verdicts"] = std::move(verdicts);
  doc["summary"] = std::move(summary);
  MergedReport out;
  out.exit_code = exit_code;
  out.json = json_text(doc) + "\n";
  out.report = JsonValue::parse(out.json);
  return out;
}


}  // namespace nvfp4
