//! Cancelling runs (Ctrl-C in the CLI). In a test binary of its own: the flag is process-wide
//! and would stop other tests' runs if they shared the process.

use longhaul_sim::engine::{cancel_runs, run, EventQueue, Model, Stop, Time, CANCEL_CHECK_EVENTS};

/// Schedules itself forever: only a time limit or cancellation ends it.
struct Ticker;

impl Model for Ticker {
    type Event = ();
    fn handle(&mut self, now: Time, _: (), q: &mut EventQueue<()>) {
        q.schedule(now + 1, ());
    }
    fn finished(&self) -> bool {
        false
    }
}

#[test]
fn a_cancelled_run_stops_within_one_check_interval_and_runs_resume_once_cleared() {
    let mut q = EventQueue::new();
    q.schedule(0, ());
    assert_eq!(run(&mut Ticker, &mut q, 10_000), Stop::TimeLimit);
    cancel_runs(true);
    let stop = run(&mut Ticker, &mut q, Time::MAX);
    let ran_on = q.now() - 10_001;
    cancel_runs(false);
    assert_eq!(stop, Stop::Cancelled);
    assert!(ran_on <= CANCEL_CHECK_EVENTS, "ran on for {ran_on} events");
    let until = q.now() + 100;
    assert_eq!(run(&mut Ticker, &mut q, until), Stop::TimeLimit);
}
