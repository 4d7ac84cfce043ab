#include "pipeline/read_ahead.h"

namespace sluice::detail {

ReadAhead::ReadAhead(std::function<Place(uint64_t)> locate, ReadSpan read, uint64_t budget_bytes)
    : locate_(std::move(locate)),
      read_(std::move(read)),
      budget_(std::max<uint64_t>(1, budget_bytes)) {}

ReadAhead::~ReadAhead() {
  for (auto& t : threads_) t.request_stop();
  cv_.notify_all();
  threads_.clear();  // joins
}

void ReadAhead::follow(std::shared_ptr<const std::vector<uint32_t>> plan, uint64_t first,
                       int threads) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
    plan_ = std::move(plan);
    cursor_ = first;
    // Fetches in flight keep their reservation until they land (finish()
    // drops them as stale); ready ones are freed now.
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.ready) {
        held_ -= it->second.bytes;
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
    skip_.clear();
  }
  while (static_cast<int>(threads_.size()) < threads)
    threads_.emplace_back([this](std::stop_token st) { fetcher(st); });
  cv_.notify_all();
}

// The next run of plan entries to fetch: consecutive records of one file,
// up to kBlockBytes, within the budget. False when there is none now.
bool ReadAhead::next_job(Job* job) {
  if (!plan_) return false;
  const auto& plan = *plan_;
  // Skipped: records a worker read itself, and ones a fetch of an earlier
  // generation still holds (take() waits for that fetch to be dropped and
  // the worker reads them).
  while (cursor_ < plan.size() && (skip_.erase(plan[cursor_]) || entries_.count(plan[cursor_])))
    ++cursor_;
  if (cursor_ >= plan.size()) return false;
  Place first = locate_(plan[cursor_]);
  if (held_ > 0 && held_ + first.size > budget_) return false;
  *job = Job{generation_, first.file, first.index, {plan[cursor_]}, first.size};
  Place last = first;
  for (uint64_t k = cursor_ + 1; k < plan.size(); ++k) {
    Place p = locate_(plan[k]);
    if (p.file != last.file || p.index != last.index + 1 || p.offset != last.offset + last.size ||
        job->bytes + p.size > kBlockBytes || held_ + job->bytes + p.size > budget_ ||
        skip_.count(plan[k]) || entries_.count(plan[k]))
      break;
    job->ids.push_back(plan[k]);
    job->bytes += p.size;
    last = p;
  }
  cursor_ += job->ids.size();
  for (size_t i = 0; i < job->ids.size(); ++i) {
    Entry& e = entries_[job->ids[i]];
    e.bytes = locate_(job->ids[i]).size;
    held_ += e.bytes;
  }
  return true;
}

void ReadAhead::fetcher(std::stop_token st) {
  std::vector<std::string> records;
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait(lock, st, [&] { return next_job(&job); })) return;
    }
    records.clear();
    Status s = read_(job.file, job.index, job.ids.size(), &records);
    finish(job, std::move(s), &records);
  }
}

void ReadAhead::finish(const Job& job, Status s, std::vector<std::string>* records) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < job.ids.size(); ++i) {
    auto it = entries_.find(job.ids[i]);
    if (it == entries_.end() || it->second.ready) continue;
    Entry& e = it->second;
    if (job.generation != generation_) {  // the epoch moved on meanwhile
      held_ -= e.bytes;
      entries_.erase(it);
      continue;
    }
    if (!s.ok() && job.ids.size() > 1) {  // one bad record must not fail its neighbours:
      held_ -= e.bytes;                   // each is read by its worker instead
      entries_.erase(it);
      continue;
    }
    e.ready = true;
    e.status = s;
    if (s.ok() && i < records->size()) e.data = std::move((*records)[i]);
  }
  cv_.notify_all();
}

bool ReadAhead::take(uint64_t id, std::string* bytes, Status* status) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    skip_.insert(id);
    return false;
  }
  const uint64_t generation = generation_;
  cv_.wait(lock, [&] {
    it = entries_.find(id);
    return it == entries_.end() || it->second.ready || generation != generation_;
  });
  if (it == entries_.end() || !it->second.ready) return false;
  bytes->swap(it->second.data);
  *status = std::move(it->second.status);
  held_ -= it->second.bytes;
  entries_.erase(it);
  cv_.notify_all();
  return true;
}

uint64_t ReadAhead::held_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

}  // namespace sluice::detail
