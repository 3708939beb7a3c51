//! The simulation kernel: time, the event queue, random streams and the run loop.
//!
//! It knows nothing about networks. A model (the network + hosts + workload) is one value that
//! implements [`Model`]; its components own their state and talk through events it defines.

pub mod queue;
pub mod rng;
pub mod time;

pub use queue::EventQueue;
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
}

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Finished,
    Idle,
    TimeLimit,
}

/// Run `model` until it is finished, nothing is pending, or simulated time passes `until`.
pub fn run<M: Model>(model: &mut M, q: &mut EventQueue<M::Event>, until: Time) -> Stop {
    loop {
        if model.finished() {
            return Stop::Finished;
        }
        match q.peek_time() {
            None => return Stop::Idle,
            Some(t) if t > until => return Stop::TimeLimit,
            _ => {}
        }
        let (now, ev) = q.pop().expect("peeked");
        model.handle(now, ev, q);
    }
}
