// A stand-in for libcudart with one device whose "device memory" is host
// memory, so the GPU data path runs end to end on machines without a GPU.
// It is asynchronous like the real runtime: every stream is a thread that
// runs its operations in order, copies take SLUICE_FAKE_CUDA_DELAY_US
// microseconds each (default 200), and events complete when their stream
// reaches them. A host slot reused before its copy finished, or a device
// buffer overwritten while the consumer still reads it, therefore shows up
// as wrong bytes in the tests. Counters (fake_cuda_*) let tests check that
// every allocation is freed.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace {

struct Event {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;   // generations handed out by cudaEventRecord
  uint64_t completed = 0;  // generations the stream has reached
  std::chrono::steady_clock::time_point when{};
};

class Stream {
 public:
  Stream() : thread_([this] { run(); }) {}
  ~Stream() {
    {
      std::lock_guard l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void push(std::function<void()> op) {
    {
      std::lock_guard l(mu_);
      ops_.push_back(std::move(op));
      ++pushed_;
    }
    cv_.notify_all();
  }
  void drain() {
    std::unique_lock l(mu_);
    uint64_t target = pushed_;
    done_cv_.wait(l, [&] { return done_ >= target; });
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> op;
      {
        std::unique_lock l(mu_);
        cv_.wait(l, [&] { return stop_ || !ops_.empty(); });
        if (ops_.empty()) return;
        op = std::move(ops_.front());
        ops_.pop_front();
      }
      op();
      {
        std::lock_guard l(mu_);
        ++done_;
      }
      done_cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<void()>> ops_;
  uint64_t pushed_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

std::atomic<long> g_device_allocs{0}, g_host_allocs{0}, g_streams{0}, g_events{0};
std::atomic<long> g_copies{0};
thread_local int g_device = 0;

Stream& legacy_stream() {
  static Stream* s = new Stream();  // never destroyed: used until exit
  return *s;
}

Stream& stream_of(void* s) {
  return s ? *static_cast<Stream*>(s) : legacy_stream();
}

int delay_us() {
  static int d = [] {
    const char* v = std::getenv("SLUICE_FAKE_CUDA_DELAY_US");
    return v ? std::atoi(v) : 200;
  }();
  return d;
}

// Notifies under the lock: a waiter may destroy the event as soon as it
// sees it complete.
void complete(Event* e, uint64_t gen) {
  std::lock_guard l(e->mu);
  if (gen > e->completed) e->completed = gen;
  e->when = std::chrono::steady_clock::now();
  e->cv.notify_all();
}

void wait_for(Event* e, uint64_t gen) {
  std::unique_lock l(e->mu);
  e->cv.wait(l, [&] { return e->completed >= gen; });
}

}  // namespace

extern "C" {

#define EXPORT __attribute__((visibility("default")))

EXPORT int cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return 0;
}
EXPORT int cudaDriverGetVersion(int* v) {
  *v = 13000;
  return 0;
}
EXPORT int cudaGetDeviceCount(int* n) {
  *n = 1;
  return 0;
}
EXPORT int cudaGetDevice(int* d) {
  *d = g_device;
  return 0;
}
EXPORT int cudaSetDevice(int d) {
  if (d != 0) return 101;  // cudaErrorInvalidDevice
  g_device = d;
  return 0;
}
EXPORT int cudaMalloc(void** p, size_t n) {
  *p = std::aligned_alloc(256, (n + 255) / 256 * 256 + 256);
  if (!*p) return 2;  // cudaErrorMemoryAllocation
  ++g_device_allocs;
  return 0;
}
EXPORT int cudaFree(void* p) {
  if (p) {
    --g_device_allocs;
    std::free(p);
  }
  return 0;
}
EXPORT int cudaHostAlloc(void** p, size_t n, unsigned) {
  *p = std::aligned_alloc(4096, (n + 4095) / 4096 * 4096 + 4096);
  if (!*p) return 2;
  ++g_host_allocs;
  return 0;
}
EXPORT int cudaFreeHost(void* p) {
  if (p) {
    --g_host_allocs;
    std::free(p);
  }
  return 0;
}
EXPORT int cudaMemcpyAsync(void* dst, const void* src, size_t n, int, void* stream) {
  ++g_copies;
  stream_of(stream).push([dst, src, n] {
    // The copy reads its source late, as a DMA engine would.
    if (delay_us() > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us()));
    std::memcpy(dst, src, n);
  });
  return 0;
}
EXPORT int cudaMemcpy(void* dst, const void* src, size_t n, int) {
  legacy_stream().drain();
  std::memcpy(dst, src, n);
  return 0;
}
EXPORT int cudaStreamCreateWithFlags(void** s, unsigned) {
  *s = new Stream();
  ++g_streams;
  return 0;
}
EXPORT int cudaStreamDestroy(void* s) {
  if (s) {
    --g_streams;
    delete static_cast<Stream*>(s);  // finishes its queued work first
  }
  return 0;
}
EXPORT int cudaStreamSynchronize(void* s) {
  stream_of(s).drain();
  return 0;
}
EXPORT int cudaEventCreateWithFlags(void** e, unsigned) {
  *e = new Event();
  ++g_events;
  return 0;
}
EXPORT int cudaEventDestroy(void* e) {
  if (e) {
    --g_events;
    delete static_cast<Event*>(e);
  }
  return 0;
}
EXPORT int cudaEventRecord(void* ev, void* stream) {
  Event* e = static_cast<Event*>(ev);
  uint64_t gen;
  {
    std::lock_guard l(e->mu);
    gen = ++e->recorded;
  }
  stream_of(stream).push([e, gen] { complete(e, gen); });
  return 0;
}
EXPORT int cudaEventQuery(void* ev) {
  Event* e = static_cast<Event*>(ev);
  std::lock_guard l(e->mu);
  return e->completed >= e->recorded ? 0 : 600;  // cudaErrorNotReady
}
EXPORT int cudaEventSynchronize(void* ev) {
  Event* e = static_cast<Event*>(ev);
  uint64_t gen;
  {
    std::lock_guard l(e->mu);
    gen = e->recorded;
  }
  wait_for(e, gen);
  return 0;
}
EXPORT int cudaEventElapsedTime(float* ms, void* a, void* b) {
  Event* x = static_cast<Event*>(a);
  Event* y = static_cast<Event*>(b);
  std::scoped_lock l(x->mu, y->mu);
  if (x->completed < x->recorded || y->completed < y->recorded) return 600;
  *ms = std::chrono::duration<float, std::milli>(y->when - x->when).count();
  return 0;
}
// Waits for the work recorded in `ev` so far (a never-recorded event: no wait).
EXPORT int cudaStreamWaitEvent(void* stream, void* ev, unsigned) {
  Event* e = static_cast<Event*>(ev);
  uint64_t gen;
  {
    std::lock_guard l(e->mu);
    gen = e->recorded;
  }
  if (gen > 0) stream_of(stream).push([e, gen] { wait_for(e, gen); });
  return 0;
}
EXPORT int cudaLaunchHostFunc(void* stream, void (*fn)(void*), void* data) {
  stream_of(stream).push([fn, data] { fn(data); });
  return 0;
}
EXPORT int cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = size_t{64} << 30;
  *total = size_t{80} << 30;
  return 0;
}
EXPORT int cudaGetLastError() {
  return 0;
}
EXPORT const char* cudaGetErrorString(int e) {
  return e == 0 ? "no error" : e == 600 ? "device not ready" : "fake CUDA error";
}

// For tests: what is still allocated or alive.
EXPORT long fake_cuda_device_allocations() {
  return g_device_allocs;
}
EXPORT long fake_cuda_host_allocations() {
  return g_host_allocs;
}
EXPORT long fake_cuda_streams() {
  return g_streams;
}
EXPORT long fake_cuda_events() {
  return g_events;
}
EXPORT long fake_cuda_copies() {
  return g_copies;
}

}  // extern "C"
