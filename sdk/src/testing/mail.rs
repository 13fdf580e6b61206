//! A stand-in for the host's mail, so notifiers are unit-tested natively.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::mail::{MailError, Message};

struct State {
    script: VecDeque<Result<(), MailError>>,
    sent: Vec<Message>,
}

thread_local! {
    static MOCK: RefCell<Option<Rc<RefCell<State>>>> = const { RefCell::new(None) };
}

/// Answers [`mail::send`](crate::mail::send) on the thread that installed
/// it (natively; on wasm the host answers): it records every message and
/// gives the scripted answers in order, then `Ok`. Dropping it uninstalls it.
///
/// ```
/// use nightjar_sdk::mail::{self, MailError, Message};
/// use nightjar_sdk::testing::MailMock;
///
/// let mock = MailMock::install();
/// mock.fail(MailError::Transient("421 busy".into()));
/// let m = Message::new(vec!["a@lab.example.edu".into()], "hi", "text", "1-mail");
/// assert!(mail::send(m.clone()).is_err());
/// assert!(mail::send(m).is_ok());
/// assert_eq!(mock.sent().len(), 2);
/// ```
pub struct MailMock {
    state: Rc<RefCell<State>>,
}

impl MailMock {
    /// Installs a mock on this thread (replacing any other) and returns it.
    pub fn install() -> MailMock {
        let state = Rc::new(RefCell::new(State {
            script: VecDeque::new(),
            sent: Vec::new(),
        }));
        MOCK.with(|m| *m.borrow_mut() = Some(Rc::clone(&state)));
        MailMock { state }
    }

    /// Queues a failure for the next message.
    pub fn fail(&self, error: MailError) -> &MailMock {
        self.state.borrow_mut().script.push_back(Err(error));
        self
    }

    /// The messages handed over so far (failed ones too), oldest first.
    pub fn sent(&self) -> Vec<Message> {
        self.state.borrow().sent.clone()
    }
}

impl Drop for MailMock {
    fn drop(&mut self) {
        let _ = MOCK.try_with(|m| {
            let mut m = m.borrow_mut();
            if m.as_ref().is_some_and(|s| Rc::ptr_eq(s, &self.state)) {
                *m = None;
            }
        });
    }
}

/// What [`mail::send`](crate::mail::send) does natively.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
pub(crate) fn answer(message: Message) -> Result<(), MailError> {
    let state = MOCK.with(|m| m.borrow().clone());
    let Some(state) = state else {
        return Err(MailError::Transient(
            "there is no host off wasm: install a nightjar_sdk::testing::MailMock".into(),
        ));
    };
    let mut state = state.borrow_mut();
    state.sent.push(message);
    state.script.pop_front().unwrap_or(Ok(()))
}
