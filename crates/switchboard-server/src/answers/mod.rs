//! The routes by which the person answers what `serve` asks: calls to approve
//! ([`approvals`]), servers' questions ([`questions`]), requests for a completion
//! ([`sampling`]). Each lists what waits and takes one answer by id; the queues themselves are
//! `crate::approvals`, `crate::questions` and `crate::sampling`, which know nothing of HTTP.
//! One handler answers all three ([`answer::answer_in`]).

mod answer;
pub(crate) mod approvals;
pub(crate) mod questions;
pub(crate) mod sampling;
