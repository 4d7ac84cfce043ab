// The executor's loops and the ring's bookkeeping (pipeline_impl.h): what
// the worker threads and the stager run, and how the ring moves between
// epochs.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "pipeline/pipeline_impl.h"

namespace sluice {
namespace {

using detail::Slot;
using detail::SlotState;

}  // namespace

void Pipeline::Impl::assign_slots() {
  for (size_t s = 0; s < slots.size() && next_assign < batches; ++s) {
    if (slots[s].state != SlotState::kFree) continue;
    Slot& slot = slots[s];
    slot.state = SlotState::kFilling;
    slot.batch = next_assign;
    slot.size = batch_len(next_assign);
    slot.remaining = slot.size;
    slot.error = Status();
    slot.error_index = SIZE_MAX;
    std::fill(slot.valid.begin(), slot.valid.end(), 1);
    if (kernel) dev->reset_arena(static_cast<int>(s));
    for (auto& e : slot.encoded) e.pending = false;
    batch_slot[next_assign] = static_cast<int>(s);
    ++next_assign;
  }
}

void Pipeline::Impl::reset(uint64_t new_epoch, uint64_t first_batch) {
  ++generation;
  next_sample = std::numeric_limits<uint64_t>::max();  // stop claims
  consumer_cv.wait(mu, [&] {
    mu.assert_held();
    return in_flight == 0;
  });
  if (!plan || epoch != new_epoch) {
    plan = std::make_shared<const std::vector<uint32_t>>(plan_epoch(source->size(), o, new_epoch));
  }
  epoch = new_epoch;
  uint64_t n = plan->size();
  batches = o.drop_last ? n / o.batch_size : (n + o.batch_size - 1) / o.batch_size;
  first_batch = std::min(first_batch, batches);
  next_hand = next_assign = next_stage = first_batch;
  next_sample = first_batch * static_cast<uint64_t>(o.batch_size);
  source->will_read(plan, next_sample, workers);
  batch_slot.clear();
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot& s = slots[i];
    if (s.state == SlotState::kHeld) continue;
    // A staged slot's host memory may still be read by its copy.
    if (dev && s.state == SlotState::kStaged) {
      Status r = dev->reclaim(static_cast<int>(i));
      if (!r.ok()) std::fprintf(stderr, "sluice: %s\n", std::string(r.message()).c_str());
    }
    s.state = SlotState::kFree;
  }
  fatal = Status();
  assign_slots();
  work_cv.notify_all();
}

bool Pipeline::Impl::claimable(int index) const {
  if (index >= tuner->active()) return false;
  if (next_sample >= uint64_t{batches} * o.batch_size || next_sample >= samples_in_plan())
    return false;
  return batch_slot.count(next_sample / o.batch_size) != 0;
}

void Pipeline::Impl::worker(std::stop_token st, int index) {
  CropDecoder decoder;
  DecodedWindow window;
  std::vector<float> scratch;
  std::string buffer;
  for (;;) {
    uint64_t k, gen, ep;
    int s;
    std::shared_ptr<const std::vector<uint32_t>> my_plan;
    {
      MutexLock lock(&mu);
      if (!claimable(index)) {
        // Time a worker spends with nothing to do: no free slot (the
        // consumer is slower) or parked by the tuner.
        uint64_t t0 = now_ns();
        bool go = work_cv.wait(mu, st, [&] {
          mu.assert_held();
          return claimable(index);
        });
        idle_stage->add_wait(now_ns() - t0);
        if (!go) return;
      }
      k = next_sample++;
      gen = generation;
      ep = epoch;
      my_plan = plan;
      s = batch_slot.at(k / o.batch_size);
      ++in_flight;
    }
    Slot& slot = slots[static_cast<size_t>(s)];
    size_t i = static_cast<size_t>(k % static_cast<uint64_t>(o.batch_size));
    uint64_t id = (*my_plan)[k];
    uint64_t marks[4] = {};
    Status st_sample = prepare(id, ep, &decoder, &window, &scratch, &buffer, s, i, &slot.labels[i],
                               o.trace ? marks : nullptr);
    slot.ids[i] = id;
    MutexLock lock(&mu);
    --in_flight;
    if (gen != generation) {
      consumer_cv.notify_all();
      continue;
    }
    if (o.trace) add_sample_spans(index, id, marks);
    if (!st_sample.ok()) record_bad(ep, id, st_sample, &slot, i);
    const bool ready = --slot.remaining == 0;
    if (ready) slot.state = SlotState::kReady;
    ++samples_done;
    // Waking the consumer per sample cost a futex call and a context
    // switch each (sluice bench, 2 epochs of 5,000 images on 2 cores:
    // 36,483 context switches, 7 % more CPU); it waits for a ready slot or
    // an error, and a reset's wait is woken above.
    if (ready || !st_sample.ok()) consumer_cv.notify_all();
  }
}

void Pipeline::Impl::record_bad(uint64_t ep, uint64_t id, const Status& s, Slot* slot, size_t i) {
  SampleEvent e;
  e.epoch = ep;
  e.sample_id = id;
  e.source = source->where(id, &e.offset);
  std::string m(s.message());
  // The record layer already names the file and offset; keep the reason.
  for (const std::string& prefix :
       {e.source + ": offset " + std::to_string(e.offset) + ": ", e.source + ": "}) {
    if (m.rfind(prefix, 0) == 0) m = m.substr(prefix.size());
  }
  e.reason = m;
  // i is the sample's place in the batch (after compaction on the GPU
  // path, which only moves a sample towards the front past bad ones, so
  // the earliest still wins).
  if (o.on_error == ErrorPolicy::kFail && i < slot->error_index) {
    slot->error_index = i;
    slot->error = Status(s.code(), "sample " + std::to_string(id) + ": " + e.to_string());
  }
  if (o.on_error == ErrorPolicy::kWarn)
    std::fprintf(stderr, "sluice: skipping bad sample: %s\n", e.to_string().c_str());
  slot->valid[i] = 0;
  events.push_back(std::move(e));
}

void Pipeline::Impl::add_span(int track, const char* name, uint64_t start, uint64_t end,
                              uint64_t sample) {
  if (end <= start) return;
  spans.push_back({track, name, start, end, sample});
  while (spans.size() > o.trace_limit) spans.pop_front();
}

void Pipeline::Impl::add_sample_spans(int worker, uint64_t id, const uint64_t* marks) {
  add_span(worker, "read", marks[0], marks[1], id);
  add_span(worker, "decode", marks[1], marks[2], id);
  add_span(worker, "augment", marks[2], marks[3], id);
}

void Pipeline::Impl::stager(std::stop_token st) {
  for (;;) {
    int s;
    uint64_t gen;
    {
      MutexLock lock(&mu);
      bool go = consumer_cv.wait(mu, st, [&] {
        mu.assert_held();
        auto it = batch_slot.find(next_stage);
        return it != batch_slot.end() &&
               slots[static_cast<size_t>(it->second)].state == SlotState::kReady;
      });
      if (!go) return;
      s = batch_slot.at(next_stage);
      gen = generation;
      slots[static_cast<size_t>(s)].state = SlotState::kStaging;
      ++in_flight;
    }
    Slot& slot = slots[static_cast<size_t>(s)];
    size_t n = compact(&slot);
    Status r;
    if (jpeg) r = decode_on_gpu(s, &slot, gen, &n);
    if (r.ok()) {
      r = dev->stage(s, n * sample_bytes, kernel ? &staged_jobs : nullptr,
                     jpeg ? &staged_src : nullptr);
    }
    MutexLock lock(&mu);
    --in_flight;
    if (gen == generation) {
      if (!r.ok() && slot.error.ok()) slot.error = r;
      slot.count = n;
      ++next_stage;
    }
    // Staged even when a reset made it stale: its copy may still be
    // queued, and reset() reclaims (waits for) staged slots only.
    slot.state = SlotState::kStaged;
    consumer_cv.notify_all();
  }
}

size_t Pipeline::Impl::compact(Slot* slot) {
  size_t n = 0;
  if (kernel) {
    staged_jobs.clear();
    staged_encoded.clear();
  }
  for (size_t i = 0; i < slot->size; ++i) {
    if (!slot->valid[i]) continue;
    if (kernel) {
      staged_jobs.push_back(slot->jobs[i]);
      if (jpeg) staged_encoded.push_back(slot->encoded[i]);
    } else if (n != i) {
      std::memmove(slot->data + n * sample_bytes, slot->data + i * sample_bytes, sample_bytes);
    }
    slot->labels[n] = slot->labels[i];
    slot->ids[n] = slot->ids[i];
    ++n;
  }
  return n;
}

Status Pipeline::Impl::decode_on_gpu(int s, Slot* slot, uint64_t gen, size_t* n) {
  std::optional<device::GpuJpegStats> now;
  std::vector<detail::GpuDecodeStage::Bad> bad =
      gpu_stage->decode(s, *slot, *n, staged_encoded, &staged_jobs, &staged_src, &now);
  MutexLock lock(&mu);
  if (now) jpeg_stats = std::move(*now);
  if (gen == generation) {
    for (const auto& b : bad) record_bad(epoch, slot->ids[b.index], b.status, slot, b.index);
  }
  if (!bad.empty()) drop_staged(slot, bad, n);
  return fatal;
}

void Pipeline::Impl::drop_staged(Slot* slot, const std::vector<detail::GpuDecodeStage::Bad>& bad,
                                 size_t* n) {
  size_t w = 0;
  for (size_t k = 0, b = 0; k < *n; ++k) {
    if (b < bad.size() && bad[b].index == k) {
      ++b;
      continue;
    }
    staged_jobs[w] = staged_jobs[k];
    staged_src[w] = staged_src[k];
    slot->labels[w] = slot->labels[k];
    slot->ids[w] = slot->ids[k];
    ++w;
  }
  *n = w;
  staged_jobs.resize(w);
  staged_src.resize(w);
}

Status Pipeline::Impl::prepare(uint64_t id, uint64_t ep, CropDecoder* decoder,
                               DecodedWindow* window, std::vector<float>* scratch,
                               std::string* buffer, int slot, size_t i, int64_t* label,
                               uint64_t* marks) {
  if (marks) marks[0] = now_ns();
  Status s = prepare_stages(id, ep, decoder, window, scratch, buffer, slot, i, label, marks);
  if (marks) {
    // A stage that failed ends the others where it stopped.
    uint64_t end = now_ns();
    for (int k = 1; k < 4; ++k) {
      if (marks[k] == 0) marks[k] = end;
    }
  }
  return s;
}

Status Pipeline::Impl::prepare_stages(uint64_t id, uint64_t ep, CropDecoder* decoder,
                                      DecodedWindow* window, std::vector<float>* scratch,
                                      std::string* buffer, int slot, size_t i, int64_t* label,
                                      uint64_t* marks) {
  detail::RawSample raw;
  {
    StageTimer t(*read_stage);
    SLUICE_RETURN_IF_ERROR(source->read(id, buffer, &raw));
    t.done(1, raw.image.size());
  }
  if (marks) marks[1] = now_ns();
  *label = raw.label;
  AugmentPlan aug;
  {
    StageTimer t(*decode_stage);
    SLUICE_ASSIGN_OR_RETURN(ImageInfo info, probe_image(raw.image, o.max_pixels));
    aug = detail::plan_sample(o, ep, id, info);
    // GPU decoding: the encoded file goes to the arena for nvJPEG; the
    // stager decodes the batch (a file too large for its share of the
    // arena is decoded here).
    if (jpeg && info.format == ImageFormat::kJpeg && raw.image.size() <= arena_sample / 2 &&
        gpu_stage->to_gpu(id, info)) {
      size_t at = dev->reserve(slot, raw.image.size(), /*host_only=*/true);
      if (at == SIZE_MAX) return internal_error("batch slot arena overflow");
      Slot& sl = slots[static_cast<size_t>(slot)];
      std::memcpy(sl.data + at, raw.image.data(), raw.image.size());
      sl.encoded[i] = {true, at, raw.image.size(), aug.crop, aug.flip};
      t.done(1, 0);
      if (marks) marks[2] = marks[3] = now_ns();
      return Status();
    }
    SLUICE_RETURN_IF_ERROR(detail::decode_window(o, decoder, raw.image, info, aug.crop, window));
    t.done(1, static_cast<uint64_t>(window->width) * window->height * 3);
  }
  if (marks) marks[2] = now_ns();
  StageTimer t(*augment_stage);
  Slot& sl = slots[static_cast<size_t>(slot)];
  if (kernel) {
    ++cpu_decoded;
    SLUICE_RETURN_IF_ERROR(
        arena->put_window(*window, aug.flip, slot, sl.data, &sl.jobs[i], scratch));
  } else {
    SLUICE_RETURN_IF_ERROR(
        write_sample(*window, aug.flip, o.sample, sl.data + i * sample_bytes, scratch));
  }
  t.done(1, sample_bytes);
  if (marks) marks[3] = now_ns();
  return Status();
}

}  // namespace sluice
