//! The simulation kernel: time, the event queue, random streams and the run loop.
//!
//! It knows nothing about networks. A model (the network + hosts + workload) is one value that
//! implements [`Model`]; its components own their state and talk through events it defines.

pub mod queue;
pub mod rng;
pub mod time;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

pub use queue::{EventQueue, Place};
pub use rng::RngStream;
pub use time::Time;

/// A simulated system: handles its own events and says when it is finished.
pub trait Model {
    /// Small and `Copy` (indices, not payloads): the queue moves events as it sifts.
    type Event: Copy;
    /// Handle one event at time `now`; schedule follow-ups on `q`.
    fn handle(&mut self, now: Time, ev: Self::Event, q: &mut EventQueue<Self::Event>);
    /// True once the workload is complete (the run loop stops early).
    fn finished(&self) -> bool;
    /// An event the model keeps out of the queue, at the place [`EventQueue::reserve`] gave
    /// it: the run loop handles it when no queued event comes before it, as if it had been
    /// queued (a world's next transport timer, rescheduled at nearly every event: kept out,
    /// it costs no pass through the queue's heap).
    #[inline(always)]
    fn held(&self) -> Option<(Place, Self::Event)> {
        None
    }
    /// The held event is being handled: the model no longer holds it.
    #[inline(always)]
    fn take_held(&mut self) {}
    /// How much of its work is done, from 0 to 1, if it can tell (an MPI job: the steps of its
    /// ranks' programs played): read at each look at [`runs_cancelled`] for [`runs_progress`].
    fn progress(&self) -> Option<f64> {
        None
    }
}

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The model said it is finished ([`Model::finished`]).
    Finished,
    /// No event pending: nothing more can happen (a workload that stalled, or one without an end).
    Idle,
    /// Simulated time reached the caller's `until`.
    TimeLimit,
    /// [`cancel_runs`] was called: the user interrupted (Ctrl-C), the result means nothing.
    Cancelled,
}

/// Set from outside the simulation (the Python binding, on Ctrl-C) to stop every run in the
/// process: a single point can take minutes, and the caller cannot interrupt it otherwise.
static CANCEL: AtomicBool = AtomicBool::new(false);
/// Events handled between two looks at `CANCEL` (well under a millisecond of work).
pub const CANCEL_CHECK_EVENTS: u64 = 1 << 12;

/// Stop (`true`) every run in progress at its next check, and any run started until cleared.
pub fn cancel_runs(on: bool) {
    CANCEL.store(on, Ordering::Relaxed);
}

/// Whether runs are being cancelled.
pub fn runs_cancelled() -> bool {
    CANCEL.load(Ordering::Relaxed)
}

/// The share done of every run in progress in the process that reports one, summed, in
/// millionths: a point can take minutes, and the caller's progress bar would not move otherwise.
static PROGRESS_PPM: AtomicI64 = AtomicI64::new(0);

/// The shares of their work done (0 to 1 each) of the runs in progress in this process whose
/// model tells ([`Model::progress`]), summed: what a progress bar adds to the points finished.
pub fn runs_progress() -> f64 {
    PROGRESS_PPM.load(Ordering::Relaxed).max(0) as f64 / 1e6
}

/// One run's part of [`PROGRESS_PPM`], taken back when the run returns (however it returns).
struct ProgressShare(i64);

impl ProgressShare {
    fn set(&mut self, done: f64) {
        let ppm = (done.clamp(0.0, 1.0) * 1e6) as i64;
        PROGRESS_PPM.fetch_add(ppm - self.0, Ordering::Relaxed);
        self.0 = ppm;
    }
}

impl Drop for ProgressShare {
    fn drop(&mut self) {
        PROGRESS_PPM.fetch_sub(self.0, Ordering::Relaxed);
    }
}

/// Run `model` until it is finished, nothing is pending, simulated time passes `until`, or runs
/// are cancelled.
pub fn run<M: Model>(model: &mut M, q: &mut EventQueue<M::Event>, until: Time) -> Stop {
    let mut share = ProgressShare(0);
    loop {
        if model.finished() {
            return Stop::Finished;
        }
        if q.events_handled() % CANCEL_CHECK_EVENTS == 0 {
            if runs_cancelled() {
                return Stop::Cancelled;
            }
            if let Some(done) = model.progress() {
                share.set(done);
            }
        }
        let queued = q.peek();
        // The held event goes first unless a queued one comes before it.
        let held = model.held().filter(|&(place, _)| queued.is_none_or(|p| place < p));
        let Some(next) = held.map(|(place, _)| place).or(queued) else { return Stop::Idle };
        if next.at() > until {
            return Stop::TimeLimit;
        }
        let (now, ev) = match held {
            Some((place, ev)) => {
                q.advance(place);
                model.take_held();
                (place.at(), ev)
            }
            None => q.pop().expect("peeked"),
        };
        model.handle(now, ev, q);
    }
}
