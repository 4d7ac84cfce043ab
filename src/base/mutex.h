// A mutex and condition variable that Clang's thread-safety analysis can
// see (-Wthread-safety, on in every clang build: the fuzz preset in CI), as
// leveldb's port::Mutex and abseil's Mutex are annotated. libstdc++'s
// std::mutex carries no annotations, so members guarded by one are only a
// comment; guarded by a sluice::Mutex they are checked at compile time:
//
//   Mutex mu;
//   int count SLUICE_GUARDED_BY(mu) = 0;
//   void bump() { MutexLock lock(&mu); ++count; }   // fine
//   void oops() { ++count; }                        // a compile error
//
// Condition-variable predicates run with the mutex held but are separate
// functions to the analysis: they begin with mu.assert_held().
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>

#if defined(__clang__)
#define SLUICE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SLUICE_THREAD_ANNOTATION(x)
#endif

#define SLUICE_CAPABILITY(x) SLUICE_THREAD_ANNOTATION(capability(x))
#define SLUICE_SCOPED_CAPABILITY SLUICE_THREAD_ANNOTATION(scoped_lockable)
#define SLUICE_GUARDED_BY(x) SLUICE_THREAD_ANNOTATION(guarded_by(x))
#define SLUICE_PT_GUARDED_BY(x) SLUICE_THREAD_ANNOTATION(pt_guarded_by(x))
#define SLUICE_REQUIRES(...) SLUICE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define SLUICE_EXCLUDES(...) SLUICE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define SLUICE_ACQUIRE(...) SLUICE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define SLUICE_RELEASE(...) SLUICE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define SLUICE_ASSERT_HELD(x) SLUICE_THREAD_ANNOTATION(assert_capability(x))
#define SLUICE_NO_THREAD_SAFETY_ANALYSIS SLUICE_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace sluice {

class CondVar;

class SLUICE_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() SLUICE_ACQUIRE() { mu_.lock(); }
  void unlock() SLUICE_RELEASE() { mu_.unlock(); }
  // Tells the analysis the caller holds the mutex (it checks nothing at run
  // time): for predicates and callbacks that run under a lock taken
  // elsewhere.
  void assert_held() const SLUICE_ASSERT_HELD(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class SLUICE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) SLUICE_ACQUIRE(mu) : mu_(mu) { mu_->lock(); }
  ~MutexLock() SLUICE_RELEASE() { mu_->unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Waits on a Mutex the caller holds; the waits return holding it again.
// condition_variable_any for its stop_token waits (a std::jthread's stop
// request wakes the waiter).
class CondVar {
 public:
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

  template <typename Predicate>
  void wait(Mutex& mu, Predicate pred) SLUICE_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock, pred);
    lock.release();
  }
  // False when a stop was requested before `pred` held.
  template <typename Predicate>
  bool wait(Mutex& mu, std::stop_token stop, Predicate pred) SLUICE_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool ok = cv_.wait(lock, stop, pred);
    lock.release();
    return ok;
  }
  // False on timeout with `pred` still false.
  template <typename Rep, typename Period, typename Predicate>
  bool wait_for(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout, Predicate pred)
      SLUICE_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool ok = cv_.wait_for(lock, timeout, pred);
    lock.release();
    return ok;
  }

 private:
  std::condition_variable_any cv_;
};

}  // namespace sluice
