//! A transport with cross traffic beside it: the hosts of [`CrossHosts`] send and sink their
//! datagrams on the same fabric, every other host is the transport's. Applications see the
//! transport itself (through `Deref`); the fabric sees one set of endpoints.

use std::ops::{Deref, DerefMut};

use super::Transport;
use crate::engine::Time;
use crate::net::{CrossHosts, Datagram, Endpoints, NodeId, Pull};

/// Transport `T` on its hosts and cross-traffic sources and sinks on theirs, as one set of endpoints.
pub struct WithCross<T> {
    /// The application's transport.
    pub inner: T,
    /// The cross-traffic hosts (their node ids are none of the transport's).
    pub cross: CrossHosts,
}

impl<T> WithCross<T> {
    /// Put `cross`'s hosts beside `inner`'s.
    pub fn new(inner: T, cross: CrossHosts) -> Self {
        WithCross { inner, cross }
    }
}

impl<T> Deref for WithCross<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> DerefMut for WithCross<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: Transport> Endpoints<T::Packet> for WithCross<T>
where
    T::Packet: Datagram,
{
    #[inline]
    fn deliver(&mut self, now: Time, node: NodeId, pkt: T::Packet) {
        if self.cross.owns(node) {
            self.cross.deliver(&pkt);
        } else {
            self.inner.deliver(now, node, pkt);
        }
    }

    #[inline]
    fn pull(&mut self, now: Time, node: NodeId) -> Pull<T::Packet> {
        if self.cross.owns(node) {
            self.cross.pull(now, node)
        } else {
            self.inner.pull(now, node)
        }
    }

    #[inline]
    fn sent(&mut self, node: NodeId, pkt: &T::Packet, done_at: Time) {
        if !self.cross.owns(node) {
            self.inner.sent(node, pkt, done_at);
        }
    }

    #[inline]
    fn idle_at(&self, node: NodeId, at: Time) -> bool {
        // A cross host's pull says when its next datagram is due: its port must be tried.
        !self.cross.owns(node) && self.inner.idle_at(node, at)
    }
}

impl<T: Transport> Transport for WithCross<T>
where
    T::Packet: Datagram,
{
    type Packet = T::Packet;
    type Timer = T::Timer;
    type Output = T::Output;

    #[inline]
    fn unsettled(&self) -> bool {
        self.inner.unsettled()
    }

    fn drain_timers(&mut self, arm: impl FnMut(Time, Self::Timer)) {
        self.inner.drain_timers(arm);
    }

    fn take_outputs(&mut self, batch: &mut Vec<Self::Output>) {
        self.inner.take_outputs(batch);
    }

    fn on_timer(&mut self, now: Time, timer: Self::Timer, kicks: &mut Vec<NodeId>) {
        self.inner.on_timer(now, timer, kicks);
    }
}
