//! A stand-in for the host's HTTP, so notifiers are unit-tested natively.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::http::{HttpError, Request, Response};

/// What [`HttpMock`] keeps: the requests it saw and the answers to give.
struct State {
    script: VecDeque<Result<Response, HttpError>>,
    otherwise: Result<Response, HttpError>,
    requests: Vec<Request>,
}

thread_local! {
    static MOCK: RefCell<Option<Rc<RefCell<State>>>> = const { RefCell::new(None) };
}

/// Answers [`http::send`](crate::http::send) on the thread that installed
/// it (natively; on wasm the host answers): it records every request and
/// gives the scripted answers in order, then the fallback (`200` with an
/// empty body unless [`HttpMock::otherwise`] says). Dropping it uninstalls
/// it. Each test runs on a thread of its own, so tests do not see each
/// other's mocks.
///
/// ```
/// use nightjar_sdk::http::{self, HttpError};
/// use nightjar_sdk::testing::HttpMock;
///
/// let mock = HttpMock::install();
/// mock.reply(503, "busy").fail(HttpError::Timeout);
/// assert_eq!(http::post_json("https://example.org/hook", [("a", "b")], "{}").unwrap().status, 503);
/// assert_eq!(http::post_json("https://example.org/hook", [("a", "b")], "{}"), Err(HttpError::Timeout));
/// assert_eq!(http::post_json("https://example.org/hook", [("a", "b")], "{}").unwrap().status, 200);
/// assert_eq!(mock.requests().len(), 3);
/// assert_eq!(mock.requests()[0].header_value("content-type"), Some("application/json"));
/// ```
pub struct HttpMock {
    state: Rc<RefCell<State>>,
}

impl HttpMock {
    /// Installs a mock on this thread (replacing any other) and returns it.
    pub fn install() -> HttpMock {
        let state = Rc::new(RefCell::new(State {
            script: VecDeque::new(),
            otherwise: Ok(Response::new(200, "")),
            requests: Vec::new(),
        }));
        MOCK.with(|m| *m.borrow_mut() = Some(Rc::clone(&state)));
        HttpMock { state }
    }

    /// Queues an answer of `status` with `body`.
    pub fn reply(&self, status: u16, body: impl Into<Vec<u8>>) -> &HttpMock {
        self.respond(Response::new(status, body))
    }

    /// Queues `response`.
    pub fn respond(&self, response: Response) -> &HttpMock {
        self.state.borrow_mut().script.push_back(Ok(response));
        self
    }

    /// Queues a failure (no answer).
    pub fn fail(&self, error: HttpError) -> &HttpMock {
        self.state.borrow_mut().script.push_back(Err(error));
        self
    }

    /// What every request gets once the queued answers are used up.
    pub fn otherwise(&self, answer: Result<Response, HttpError>) -> &HttpMock {
        self.state.borrow_mut().otherwise = answer;
        self
    }

    /// The requests sent so far, oldest first.
    pub fn requests(&self) -> Vec<Request> {
        self.state.borrow().requests.clone()
    }

    /// The requests sent so far, oldest first, forgetting them.
    pub fn take_requests(&self) -> Vec<Request> {
        std::mem::take(&mut self.state.borrow_mut().requests)
    }
}

impl Drop for HttpMock {
    fn drop(&mut self) {
        // Uninstall only if this mock is still the installed one (a later
        // `install` replaced it otherwise). `try_with`: the thread may be
        // ending.
        let _ = MOCK.try_with(|m| {
            let mut m = m.borrow_mut();
            if m.as_ref().is_some_and(|s| Rc::ptr_eq(s, &self.state)) {
                *m = None;
            }
        });
    }
}

/// What [`http::send`](crate::http::send) does natively.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
pub(crate) fn answer(request: Request) -> Result<Response, HttpError> {
    let state = MOCK.with(|m| m.borrow().clone());
    let Some(state) = state else {
        return Err(HttpError::Unreachable(
            "there is no host off wasm: install a nightjar_sdk::testing::HttpMock".into(),
        ));
    };
    let mut state = state.borrow_mut();
    state.requests.push(request);
    match state.script.pop_front() {
        Some(answer) => answer,
        None => state.otherwise.clone(),
    }
}
