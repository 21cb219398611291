// cases.cpp — case specs, reference analysis and the reference cache (see cases.hpp).
#include "cases.hpp"

#include <chrono>

#include "case_dir.hpp"
#include "distributions.hpp"

namespace nvfp4 {

std::string CaseSpec::name() const {
  if (from_dir())
    return "case dir " + inputs_dir + (batch_last ? " (batch-last)" : "");
  return shape.str() + " " + dist + " seed " + std::to_string(seed);
}

Problem CaseSpec::make() const {
  if (from_dir()) return load_case(inputs_dir, batch_last);
  return make_problem(shape, dist, seed);
}

bool CaseSpec::operator==(const CaseSpec& o) const {
  return shape == o.shape && dist == o.dist && seed == o.seed && inputs_dir == o.inputs_dir &&
         batch_last == o.batch_last;
}

size_t CaseInfo::bytes() const {
  return sizeof(double) * (ref.g.size() + ref.u.size() + ref.g_abs.size() + ref.u_abs.size()) +
         sizeof(uint16_t) * ref.c.size();
}

std::shared_ptr<const CaseInfo> analyse_case(const CaseSpec& spec, const Problem& p) {
  auto info = std::make_shared<CaseInfo>();
  info->spec = spec;
  info->spec.shape = p.shape;
  info->alpha1 = p.alpha1;
  info->alpha2 = p.alpha2;
  info->warnings = scan_scales(p);
  const auto t0 = std::chrono::steady_clock::now();
  ReferenceOptions opt;
  opt.abs_sums = true;
  info->ref = compute_reference(p, opt);
  info->reference_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  info->degeneracy = assess_reference(info->ref.c);
  return info;
}

std::shared_ptr<const CaseInfo> ReferenceCache::get(const CaseSpec& spec) {
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    if ((*it)->spec == spec ||
        (spec.from_dir() && (*it)->spec.inputs_dir == spec.inputs_dir &&
         (*it)->spec.batch_last == spec.batch_last)) {
      lru_.splice(lru_.begin(), lru_, it);
      return lru_.front();
    }
  }
  auto info = analyse_case(spec, spec.make());
  lru_.push_front(info);
  bytes_ += info->bytes();
  while (bytes_ > max_bytes_ && lru_.size() > 1) {
    bytes_ -= lru_.back()->bytes();
    lru_.pop_back();
  }
  bool seen = false;
  for (const auto& s : seen_summary_) seen |= s->spec == info->spec;
  if (!seen) {
    auto light = std::make_shared<CaseInfo>();
    light->spec = info->spec;
    light->alpha1 = info->alpha1;
    light->alpha2 = info->alpha2;
    light->degeneracy = info->degeneracy;
    light->warnings = info->warnings;
    light->reference_seconds = info->reference_seconds;
    light->ref.shape = info->ref.shape;
    seen_summary_.push_back(light);
  }
  return info;
}

}  // namespace nvfp4
