// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Lock requirements the compiler checks: Clang's thread-safety attributes
// (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html), checked by `make lint-threads`
// (-Wthread-safety -Werror); no-ops on other compilers.
//
// libstdc++'s std::mutex carries no capability attributes, so guarded state is locked through
// the thin wrappers below: Mutex (a std::mutex), MutexLock (its scoped lock) and CondVar (a
// std::condition_variable waiting on a held Mutex). Waits are written as explicit loops,
// `while (!ready) cv.Wait(mu);`, so the analysis sees the predicate read under the lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define STOKER_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define STOKER_THREAD_ANNOTATION(x)
#endif

/// The class is a lock (a capability named `x` in diagnostics).
#define CAPABILITY(x) STOKER_THREAD_ANNOTATION(capability(x))
/// The class is an RAII lock: it holds what its constructor acquires until it is destroyed.
#define SCOPED_CAPABILITY STOKER_THREAD_ANNOTATION(scoped_lockable)
/// The member may be read or written only while holding `x`.
#define GUARDED_BY(x) STOKER_THREAD_ANNOTATION(guarded_by(x))
/// The data the pointer member points to may be accessed only while holding `x`.
#define PT_GUARDED_BY(x) STOKER_THREAD_ANNOTATION(pt_guarded_by(x))
/// The caller must hold the given locks.
#define REQUIRES(...) STOKER_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
/// The caller must not hold the given locks (the function takes them itself).
#define EXCLUDES(...) STOKER_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
/// The function acquires the given locks (this object when none is named) and returns holding
/// them.
#define ACQUIRE(...) STOKER_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
/// The function releases the given locks (this object when none is named).
#define RELEASE(...) STOKER_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
/// The function checks at run time that the lock is held (and tells the analysis so).
#define ASSERT_CAPABILITY(x) STOKER_THREAD_ANNOTATION(assert_capability(x))
/// Turns the analysis off for one function; say why beside each use.
#define NO_THREAD_SAFETY_ANALYSIS STOKER_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace stoker {

/// A std::mutex the analysis knows as a lock. Not recursive.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mutex_.lock(); }
  void Unlock() RELEASE() { mutex_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mutex_;
};

/// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) : mutex_(mutex) { mutex_.Lock(); }
  ~MutexLock() RELEASE() { mutex_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mutex_;
};

/// A condition variable whose waits take the Mutex the caller holds. Like any condition
/// variable it may wake spuriously: wait in a loop that re-checks the condition.
class CondVar {
 public:
  /// Releases `mutex`, sleeps until notified, and holds `mutex` again on return.
  void Wait(Mutex& mutex) REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock(mutex.mutex_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // the caller keeps holding it
  }

  /// As Wait, but returns false once `deadline` has passed.
  template <typename Clock, typename Duration>
  bool WaitUntil(Mutex& mutex, const std::chrono::time_point<Clock, Duration>& deadline)
      REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock(mutex.mutex_, std::adopt_lock);
    const bool notified = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return notified;
  }

  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace stoker
