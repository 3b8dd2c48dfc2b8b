//! The clock's safety net for one Z3 check, in the checking thread's CPU
//! time. Z3's own `timeout` counts wall time, so on a loaded machine (CI,
//! `--jobs` above the core count) it stopped checks that an idle machine
//! decided, and reports changed with the load. A check that runs past its
//! CPU limit is interrupted by a watchdog thread instead: the net then
//! depends on the work the check did, not on what else runs.

use crate::hash::HashMap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

/// A check being watched: the thread's CPU clock, its Z3 context and the
/// CPU time at which it is interrupted.
struct Watch {
    #[cfg(unix)]
    clock: libc::clockid_t,
    context: usize,
    until: Duration,
    fired: bool,
}

#[derive(Default)]
struct Watches {
    next: u64,
    live: HashMap<u64, Watch>,
}

fn state() -> &'static (Mutex<Watches>, Condvar) {
    static STATE: OnceLock<(Mutex<Watches>, Condvar)> = OnceLock::new();
    STATE.get_or_init(|| {
        std::thread::Builder::new()
            .name("warpdrf-watchdog".into())
            .spawn(watch_loop)
            .expect("the watchdog thread starts");
        Default::default()
    })
}

/// Runs `check` (a Z3 call on this thread's context); interrupts it once
/// this thread's CPU time reaches `until`. Also says whether it was
/// interrupted.
pub fn within_cpu<T>(until: Duration, check: impl FnOnce() -> T) -> (T, bool) {
    #[cfg(unix)]
    {
        let Some(clock) = thread_clock() else {
            return (check(), false);
        };
        let context = z3::Context::thread_local().get_z3_context().as_ptr() as usize;
        let (lock, wake) = state();
        let id = {
            let mut w = lock.lock().unwrap_or_else(|p| p.into_inner());
            let id = w.next;
            w.next += 1;
            w.live.insert(
                id,
                Watch {
                    clock,
                    context,
                    until,
                    fired: false,
                },
            );
            id
        };
        wake.notify_one();
        let r = check();
        // Removed under the lock: the watchdog interrupts a context only
        // while its check is registered (an interrupt between checks would
        // be harmless too: Z3 clears it when the next check starts).
        let fired = lock
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .live
            .remove(&id)
            .is_some_and(|w| w.fired);
        (r, fired)
    }
    #[cfg(not(unix))]
    {
        let _ = until;
        (check(), false)
    }
}

#[cfg(unix)]
fn thread_clock() -> Option<libc::clockid_t> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `pthread_getcpuclockid` writes one `clockid_t` for the calling
    // thread, which outlives the watch (it is removed before `within_cpu`
    // returns).
    let ok = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } == 0;
    ok.then_some(clock)
}

#[cfg(unix)]
fn cpu_of(clock: libc::clockid_t) -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `clock_gettime` writes the one `timespec` it is given.
    (unsafe { libc::clock_gettime(clock, &mut ts) } == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// Sleeps until the nearest limit could be reached: a thread's CPU time
/// grows no faster than wall time, so the smallest remaining CPU time is a
/// safe wall-clock sleep (no polling while checks are far from their nets).
fn watch_loop() {
    let (lock, wake) = state();
    let mut w = lock.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let mut sleep: Option<Duration> = None;
        #[cfg(unix)]
        for watch in w.live.values_mut().filter(|w| !w.fired) {
            let Some(now) = cpu_of(watch.clock) else { continue };
            if now >= watch.until {
                let context = std::ptr::NonNull::new(watch.context as *mut z3_sys::_Z3_context);
                if let Some(context) = context {
                    // SAFETY: the context belongs to a thread whose check is
                    // registered, so it is alive; Z3_interrupt may be called
                    // from any thread.
                    unsafe { z3_sys::Z3_interrupt(context) };
                }
                watch.fired = true;
            } else {
                let left = watch.until - now;
                sleep = Some(sleep.map_or(left, |s| s.min(left)));
            }
        }
        w = match sleep {
            None => wake.wait(w).unwrap_or_else(|p| p.into_inner()),
            Some(d) => {
                let d = d.max(Duration::from_millis(1));
                wake.wait_timeout(w, d).unwrap_or_else(|p| p.into_inner()).0
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use z3::ast::BV;
    use z3::{SatResult, Solver};

    /// A query that runs for seconds: factoring a 64-bit number.
    fn slow_query() -> Solver {
        let s = Solver::new();
        let x = BV::new_const("x", 64);
        let y = BV::new_const("y", 64);
        s.assert(x.bvmul(&y).eq(BV::from_u64(0xC5A3_9F1B_7D3E_2A97, 64)));
        s.assert(x.bvugt(BV::from_u64(1, 64)));
        s.assert(y.bvugt(BV::from_u64(1, 64)));
        s.assert(x.bvult(BV::from_u64(1 << 32, 64)));
        s.assert(y.bvult(BV::from_u64(1 << 33, 64)));
        s
    }

    #[test]
    fn a_check_past_its_cpu_limit_is_interrupted_and_the_next_is_not() {
        let start = crate::obligation::smt::thread_cpu();
        let s = slow_query();
        let (r, fired) = within_cpu(start + Duration::from_millis(150), || s.check());
        assert_eq!(r, SatResult::Unknown);
        assert!(fired);
        // The interrupt does not outlive its check.
        let easy = Solver::new();
        easy.assert(BV::new_const("z", 8).bvugt(BV::from_u64(3, 8)));
        let (r, fired) = within_cpu(crate::obligation::smt::thread_cpu() + Duration::from_secs(60), || {
            easy.check()
        });
        assert_eq!(r, SatResult::Sat);
        assert!(!fired);
    }
}
