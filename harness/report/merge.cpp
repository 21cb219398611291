// merge.cpp — shard records and `harness --merge` (see merge.hpp).
#include "merge.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "compare.hpp"
#include "errors.hpp"
#include "json.hpp"
#include "report.hpp"
#include "trial.hpp"

namespace nvfp4 {

namespace {

// ---- composing JSON text from parsed values (JsonValue::text() is compact JSON) ----

std::string quoted(const std::string& s) {
  std::ostringstream os;
  JsonWriter(os).value(s);
  return os.str();
}

using Members = std::vector<std::pair<std::string, std::string>>;  // key, JSON text of the value

std::string object_text(const Members& members) {
  std::string s = "{";
  for (const auto& m : members) s += (s.size() > 1 ? "," : "") + quoted(m.first) + ":" + m.second;
  return s + "}";
}

// A parsed value as JSON text (text() writes a string unquoted).
std::string json_text(const JsonValue& v) { return v.is_string() ? quoted(v.str()) : v.text(); }

std::string array_text(const std::vector<std::string>& texts) {
  std::string s = "[";
  for (const auto& t : texts) s += (s.size() > 1 ? "," : "") + t;
  return s + "]";
}

std::string strings_text(const std::vector<std::string>& v) {
  std::vector<std::string> q;
  for (const auto& s : v) q.push_back(quoted(s));
  return array_text(q);
}

// ---- the shard record ----

std::string record_backends_text(const std::vector<ShardRecord::Backend>& backends, bool owned) {
  std::vector<std::string> out;
  for (const auto& b : backends) {
    Members m{{"name", quoted(b.name)}, {"suite", strings_text(b.suite)}};
    if (owned) m.push_back({"cases", strings_text(b.owned)});
    out.push_back(object_text(m));
  }
  return array_text(out);
}

// One input of a merge: a shard report and what its record says.
struct Shard {
  const JsonValue* report = nullptr;
  std::string file;
  ShardSpec spec;
  std::string verify;
  std::vector<ShardRecord::Backend> backends;
};

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
    if (!other || json_text(*other) != json_text(m.second))
      return "different trial options (" + m.first + ": " + json_text(m.second) + " and " +
             (other ? json_text(*other) : "absent") + ")";
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
  const std::string rec = object_text({{"index", std::to_string(record.shard.index)},
                                       {"count", std::to_string(record.shard.count)},
                                       {"verify", quoted(record.verify)},
                                       {"backends", record_backends_text(record.backends, true)}});
  Members m;
  bool placed = false;
  for (const auto& kv : r.members()) {
    m.push_back({kv.first, json_text(kv.second)});
    if (kv.first == "options") {
      m.push_back({"shard", rec});
      placed = true;
    }
  }
  if (!placed) m.push_back({"shard", rec});
  return object_text(m) + "\n";
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

  // The merged report, member by member in write_json's order.
  std::vector<std::string> trials;
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
      Members m;
      for (const auto& kv : t.json->members())
        m.push_back({kv.first, kv.first == "index" ? std::to_string(trials.size() + 1) : json_text(kv.second)});
      trials.push_back(object_text(m));
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
  std::vector<std::pair<size_t, std::string>> cases;
  std::set<std::string> case_seen;
  for (const Shard* s : by_index)
    for (const auto& c : s->report->at("cases").items()) {
      const std::string name = c.str_or("name", "");
      if (!case_seen.insert(name).second) continue;
      const auto it = canonical.find(name);
      cases.push_back({it == canonical.end() ? canonical.size() : it->second, json_text(c)});
    }
  std::stable_sort(cases.begin(), cases.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> case_texts;
  for (const auto& c : cases) case_texts.push_back(c.second);
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
  std::vector<std::string> backend_texts;
  for (const auto& n : backend_order) backend_texts.push_back(json_text(*backend[n]));
  std::vector<std::string> verdicts, files;
  for (const Shard* s : by_index) {
    files.push_back(s->file);
    if (const JsonValue* v = s->report->find("verdicts"); v && v->is_array())
      for (const auto& x : v->items()) verdicts.push_back(json_text(x));
  }
  Members summary;
  for (Outcome o : kOrder) summary.push_back({outcome_name(o), std::to_string(total[o])});
  // The shards' reference caches and comparisons, each count summed (the first shard's directory;
  // the first rejection any shard reported). Reports written before these members have none.
  Members cache_members, comparisons;
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
    cache_members.push_back({"enabled", enabled ? "true" : "false"});
    if (enabled) {
      cache_members.push_back({"dir", quoted(dir)});
      for (const char* k : {"hits", "computed", "rejected", "write_failures", "evicted"})
        cache_members.push_back({k, std::to_string(counts[k])});
      if (!first_rejection.empty()) cache_members.push_back({"first_rejection", quoted(first_rejection)});
    }
    for (const char* k : {"scanned", "reused"}) comparisons.push_back({k, std::to_string(compared[k])});
  }

  const JsonValue& first = *by_index.front()->report;
  const std::string record = object_text({{"count", std::to_string(count)},
                                          {"merged_from", strings_text(files)},
                                          {"verify", quoted(by_index.front()->verify)},
                                          {"backends", record_backends_text(suites, false)}});
  char secs[40], over[40];
  std::snprintf(secs, sizeof secs, "%.17g", elapsed);
  std::snprintf(over, sizeof over, "%.17g", overhead);
  MergedReport out;
  out.exit_code = exit_code;
  out.json = object_text({{"schema", std::to_string(kReportSchema)},
                          {"tool", json_text(first.at("tool"))},
                          {"mode", quoted("verify")},
                          {"command", quoted(command)},
                          {"exit_code", std::to_string(exit_code)},
                          {"elapsed_s", secs},
                          {"overhead_s", over},
                          {"reference_cache", object_text(cache_members)},
                          {"comparisons", object_text(comparisons)},
                          {"options", json_text(first.at("options"))},
                          {"shard", record},
                          {"backends", array_text(backend_texts)},
                          {"cases", array_text(case_texts)},
                          {"trials", array_text(trials)},
                          {"verdicts", array_text(verdicts)},
                          {"summary", object_text(summary)}}) +
             "\n";
  out.report = JsonValue::parse(out.json);
  return out;
}


}  // namespace nvfp4
