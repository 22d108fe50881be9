"""A third, independent generator of failure sets with known causes, written before any result on it was seen: a
web-browsing shop agent (WebArena-like tasks: find a product, check out, fill a form). Nothing is shared with
tests/failure_sets.py or tests/failure_sets_ops.py (vocabulary, templates, step layout, noise are its own), so a
method tuned on those is tested here on text it has never met.

``failure_set(seed, n_causes, n_failures, style)`` returns native run-log records and the truth like
``tests.failure_sets.failure_set``. What makes it hard:

* **boilerplate shared by the causes inside the failing text itself**: most errors come wrapped in the browser
  driver's envelope ("Locator.click failed [E_ACTION] ... Call log: waiting for selector ..."), whatever went
  wrong, so the words every cause shares sit in the same segment as the words that tell causes apart;
* a coarse **error code** in the envelope that several causes share (``E_ACTION``, ``E_PAGE``): a field that
  looks structured but does not name the cause;
* every cause has several cores with little lexical overlap ("sold out", "currently unavailable"), inside frames
  with slots (selectors, URLs, product names, prices, ids), random case;
* causes show in a tool's error, in a page's text returned as a tool result, in the final answer (a wrong product
  against the reference, a refusal without any tool), or in the trajectory (the same scroll repeated to the step
  limit);
* noise that is not the cause: a recovered stale-element retry, a cookie banner dismissed, an extra search;
* two styles: ``browser`` (typed actions ``goto``/``click``/``fill``/``read_page``) and ``script`` (one
  ``browser`` tool whose result is a JSON observation ``{"ok": false, ...}`` or a driver log).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.failure_sets import FailureSet

Slot = Callable[[np.random.Generator], str]


def _one(*words: str) -> Slot:
    return lambda r: words[int(r.integers(len(words)))]


SLOTS: dict[str, Slot] = {
    "sel": _one(
        "#checkout > button.primary",
        "div.cart-item:nth-child(2) a",
        "input[name=email]",
        "button[data-test=add-to-cart]",
        "//span[text()='Next']",
        "a.product-link",
    ),  # fmt: skip
    "url": lambda r: (
        f"https://shop.example.com/{_one('cart', 'p', 'checkout', 'search', 'account')(r)}/"
        f"{int(r.integers(1000, 99999))}"
    ),
    "prod": _one(
        "Noise-cancelling headphones",
        "USB-C hub 7-in-1",
        "Espresso grinder",
        "Trail running shoes",
        "4K monitor 27in",
        "Cast iron skillet",
    ),  # fmt: skip
    "price": lambda r: f"{r.uniform(9, 900):.2f}",
    "ms": lambda r: str(int(r.integers(5000, 120000))),
    "sku": lambda r: f"SKU-{int(r.integers(10000, 99999))}",
    "field": _one("email", "postal code", "phone", "card number", "street address"),
    "n": lambda r: str(int(r.integers(2, 40))),
}

ACTIONS = ("Locator.click", "Locator.fill", "Page.goto", "Page.wait_for_selector", "Locator.press")
CODES = ("E_ACTION", "E_PAGE", "E_BROWSER")


@dataclass(frozen=True)
class WebCause:
    """A cause: where it shows (``error``, ``page``, ``answer``, ``no_tool``, ``loop``), the driver code its
    envelope carries (shared by several causes), its cores and frames (``{core}`` and slots filled at random)."""

    name: str
    where: str
    code: str
    cores: tuple[str, ...]
    frames: tuple[str, ...]


CAUSES: tuple[WebCause, ...] = (
    WebCause("element missing", "error", "E_ACTION",
             ("no element matches the selector", "locator resolved to 0 elements",
              "could not find the button on the page", "target element is not attached to the DOM"),
             ("{core} {sel}", "{core}", "{core} after {ms} ms", "{core} (tried {n} times)")),
    WebCause("click intercepted", "error", "E_ACTION",
             ("another element would receive the click", "a cookie banner covers the element",
              "modal dialog intercepts pointer events", "element is obscured by an overlay"),
             ("{core}: {sel}", "{core}", "retrying click on {sel}: {core}", "{core} (attempt {n})")),
    WebCause("navigation timeout", "error", "E_PAGE",
             ("navigation timeout exceeded", "page load did not finish in time",
              "waiting for the load event took too long", "net::ERR_TIMED_OUT"),
             ("{core} ({ms} ms) at {url}", "{core}", "goto {url}: {core}", "{core} while opening {url}")),
    WebCause("bot check", "page", "E_PAGE",
             ("please verify you are a human", "captcha challenge displayed",
              "access to this page has been denied by bot protection", "unusual traffic from your network"),
             ("{core}", "Page text: {core}.", "{core} - reference id {sku}", "Security check. {core}")),
    WebCause("signed out", "page", "E_PAGE",
             ("your session has expired, sign in again", "redirected to the login page",
              "authentication required to view this page", "you must be logged in to continue"),
             ("{core}", "Page text: {core}.", "{core} ({url})", "Account: {core}")),
    WebCause("out of stock", "page", "E_PAGE",
             ("this item is currently unavailable", "sold out", "out of stock in your region",
              "no longer available for purchase"),
             ("{prod}: {core}", "Page text: {prod} - {core}.", "{core} ({sku})", "{core}. Notify me when back")),
    WebCause("form rejected", "error", "E_ACTION",
             ("please enter a valid {field}", "this field is required: {field}",
              "the {field} format is not valid", "{field} must contain only digits"),
             ("{core}", "submit blocked: {core}", "{core} (form #{n})", "validation: {core}")),
    WebCause("payment declined", "page", "E_PAGE",
             ("the card was declined", "payment could not be authorised", "insufficient funds on the card",
              "transaction rejected by the issuer"),
             ("{core}", "Page text: {core}.", "Order {sku}: {core}", "Checkout: {core}, total ${price}")),
    WebCause("page missing", "page", "E_PAGE",
             ("404 page not found", "this page does not exist", "the link you followed may be broken",
              "we can't find that page"),
             ("{core}", "Page text: {core}.", "{core} ({url})", "Oops! {core}")),
    WebCause("tab crashed", "error", "E_BROWSER",
             ("the renderer process crashed", "Aw, Snap! something went wrong while displaying this page",
              "target page, context or browser has been closed", "browser has disconnected"),
             ("{core}", "{core} at {url}", "{core} after {ms} ms", "fatal: {core}")),
    WebCause("wrong product", "answer", "",
             ("The cheapest option is", "I found", "The best match is", "You should buy"),
             ("{core} {prod} at ${price}.", "{core} the {prod} ({sku}) for ${price}.", "{core}: {prod}, ${price}")),
    WebCause("no browsing", "no_tool", "",
             ("I can't browse websites in real time", "I don't have the ability to open web pages",
              "as a language model I cannot visit URLs", "I have no internet access"),
             ("{core}, so I cannot check the shop.", "Sorry, {core}.", "{core}; please look it up yourself.")),
    WebCause("scroll loop", "loop", "",
             ("scrolled down, more results are loading", "still loading more items",
              "end of list not reached yet"),
             ("{core}", "{core} ({n} shown)", "{core}...")),
    WebCause("download blocked", "error", "E_BROWSER",
             ("download was blocked by the browser", "file type is not allowed to be downloaded",
              "the attachment could not be saved", "downloads are disabled in this profile"),
             ("{core}", "{core}: invoice-{sku}.pdf", "saving invoice-{sku}.pdf: {core}", "{core} ({url})")),
)  # fmt: skip

TASKS = (
    "the cheapest {prod} with free shipping", "the order status of {sku}", "a review count for {prod}",
    "the checkout total for two {prod}", "the return window of {sku}", "a gift card balance",
)  # fmt: skip
CLOSINGS = (
    "I was unable to complete the task on the website.",
    "The task could not be finished in the browser.",
    "Stopping: the page did not let me continue.",
    "I could not get to the requested information.",
)
NOISE = ("cookie banner dismissed", "stale element reference, retried successfully", "search results: {n} items")


def fill(template: str, rng: np.random.Generator) -> str:
    """``template`` with each ``{slot}`` filled at random."""
    out = template
    for name, slot in SLOTS.items():
        while "{" + name + "}" in out:
            out = out.replace("{" + name + "}", slot(rng), 1)
    return out


def _phrase(cause: WebCause, rng: np.random.Generator) -> str:
    frame = cause.frames[int(rng.integers(len(cause.frames)))]
    text = fill(frame.replace("{core}", cause.cores[int(rng.integers(len(cause.cores)))]), rng)
    u = rng.random()
    return text.upper() if u < 0.06 else text.lower() if u < 0.2 else text


def _envelope(cause: WebCause, text: str, rng: np.random.Generator) -> str:
    """The driver's wording around an error, shared by every cause (three layouts)."""
    action = ACTIONS[int(rng.integers(len(ACTIONS)))]
    u = rng.random()
    if u < 0.4:
        return f'{action} failed [{cause.code}]: {text}\nCall log:\n  - waiting for selector "{fill("{sel}", rng)}"'
    if u < 0.7:
        return f"BrowserError [{cause.code}] {text} - see the call log for details"
    return text


def _steps(cause: WebCause, style: str, rng: np.random.Generator) -> tuple[list[dict[str, Any]], str, str]:
    text = _phrase(cause, rng)
    steps: list[dict[str, Any]] = []
    answer = CLOSINGS[int(rng.integers(len(CLOSINGS)))]
    status = "completed"
    if cause.where != "no_tool":
        steps.append({"kind": "tool_call", "tool": "goto" if style == "browser" else "browser",
                      "args": {"url": fill("{url}", rng)}, "result": "page loaded"})  # fmt: skip
        for _ in range(int(rng.integers(0, 3))):  # noise that is not the cause
            steps.append({"kind": "tool_call", "tool": "read_page" if style == "browser" else "browser",
                          "args": {"what": "results"}, "result": fill(NOISE[int(rng.integers(len(NOISE)))], rng)})  # fmt: skip
    tool = ("click", "fill", "read_page")[int(rng.integers(3))] if style == "browser" else "browser"
    args = {"selector": fill("{sel}", rng)}
    if cause.where == "error":
        wrapped = _envelope(cause, text, rng)
        if style == "browser":
            steps.append({"kind": "tool_call", "tool": tool, "args": args, "error": wrapped})
        else:
            steps.append({"kind": "tool_call", "tool": tool, "args": args,
                          "result": json.dumps({"ok": False, "code": cause.code, "message": wrapped})})  # fmt: skip
        status = "tool_failure" if rng.random() < 0.3 else "completed"
    elif cause.where == "page":  # the page says what went wrong; the driver saw no error
        body = f"Page {fill('{url}', rng)}: {text}"
        if style == "script":
            body = json.dumps({"ok": True, "code": cause.code, "page_text": text})
        steps.append({"kind": "tool_call", "tool": "read_page" if style == "browser" else tool, "args": args,
                      "result": body})  # fmt: skip
    elif cause.where in ("answer", "no_tool"):
        answer = text
    else:  # loop: the same scroll until the step limit
        for _ in range(int(rng.integers(3, 7))):
            steps.append({"kind": "tool_call", "tool": "scroll" if style == "browser" else tool,
                          "args": {"dy": 800}, "result": text})  # fmt: skip
        status = "timeout"
    steps.append({"kind": "final", "content": answer})
    for i, s in enumerate(steps):
        s["round"] = i + 1
    return steps, answer, status


def failure_set(
    *, seed: int, n_causes: int, n_failures: int, style: str = "browser", n_passes: int = 10, benchmark: str = "web"
) -> FailureSet:
    """A seeded set (see the module docstring); ``style``: ``browser`` or ``script``."""
    rng = np.random.default_rng(seed)
    chosen = [CAUSES[i] for i in rng.choice(len(CAUSES), n_causes, replace=False)]
    which = rng.choice(n_causes, n_failures, p=rng.dirichlet(np.full(n_causes, 1.8)))
    versions = ["0.9", "1.0", "1.1"]
    records: list[dict[str, Any]] = [{"record": "benchmark", "benchmark": benchmark, "scoring": "binary"}]
    records += [
        {"record": "run", "run_id": f"{benchmark}-{v}", "benchmark": benchmark, "agent": "ShopAgent",
         "agent_version": v}
        for v in versions
    ]  # fmt: skip
    n_tasks = max(12, n_failures // 5)
    for t in range(n_tasks):
        records.append(
            {"record": "task", "benchmark": benchmark, "task_id": f"w{t:05d}",
             "query": "Find " + fill(TASKS[t % len(TASKS)], rng) + ".",
             "reference_answer": fill("{prod} at ${price}", rng), "reference_trajectory": ["goto", "read_page"]}
        )  # fmt: skip
    truth: dict[tuple[str, str, int], str] = {}
    for i, c in enumerate(which):
        cause = chosen[int(c)]
        key = (f"{benchmark}-{versions[int(rng.integers(len(versions)))]}", f"w{int(rng.integers(n_tasks)):05d}", i)
        steps, answer, status = _steps(cause, style, rng)
        truth[key] = cause.name
        records.append(
            {"record": "attempt", "run_id": key[0], "task_id": key[1], "sample": i, "score": 0.0, "passed": False,
             "answer": answer, "status": status, "steps": steps}
        )  # fmt: skip
    for j in range(n_passes):
        records.append(
            {"record": "attempt", "run_id": f"{benchmark}-1.0", "task_id": "w00000", "sample": n_failures + j,
             "score": 1.0, "passed": True, "answer": "done", "steps": []}
        )  # fmt: skip
    return FailureSet(records=records, truth=truth, causes=tuple(c.name for c in chosen), benchmark=benchmark)
