"""GEM-Bench demo: four ad-injection solutions on three datasets (Tables 2, 3, 4, 6; section 4.2; Figure 3).

Source: ``../shared/seeds/gem-bench.md``. Naming: ONE benchmark ``gem-bench``; the task ``category`` is the
dataset (MT-Human, LM-Market, CA-Prod); one run per solution (agent = Ad-Chat, GI-R, GIR-R, GIR-P), plus

* an ad-free baseline run (agent ``Ad-free``, run field ``gem_role: "baseline"``): the tokens the plain LLM
  spends, so ITTFT / OTTFT are the *extra* tokens of each solution on the same task and sample;
* GIR-R runs with k = 2..5 ads per response on 30 LM-Market queries (run field ``ads_per_response``) for the
  ad-density trade-off of Figure 3 (the paper gives no numbers: the demo's decline is illustrative).

Sizes: MT-Human 10 queries x 5 repeats (the paper's cells are multiples of 0.6, i.e. means of 50 ratings),
LM-Market 100 queries, CA-Prod 120 queries. Per attempt:

* ``answer``: the ad-injected response text; attempt field ``ads``: ``[{"name", "url", "text"}]`` (the ads
  the solution chose; a response whose text does not carry them has no ad, as Ad-Chat sometimes does);
* ``metrics`` (stored with source 'log'): the published quantitative metrics ``response_flow``,
  ``response_coherence``, ``ad_flow``, ``ad_coherence`` (ad responses only), ``injection`` (0/1) and
  ``click`` (0/1, CA-Prod only) as fractions; means per dataset x solution reproduce Table 2;
* ``input_tokens`` / ``output_tokens``: baseline tokens plus the solution's extra tokens (Table 6);
* rating records: the six judge dimensions (0/30/60/90) from four LLM judges (gpt-4.1-mini = Table 3,
  qwen-max = Table 8, kimi-k2 = Table 9, claude-3.5-haiku = Table 10; overalls = Table 4); for MT-Human the
  default judge's two sub-dimension levels (``accuracy/relevance`` ... 0 bad, 1 moderate, 2 good) as well;
* 3,140 human ratings by 157 raters on 20 queries x {Ad-Chat, GI-R} (section 4.2).

Every cell mean is hit with integer programming by hand: a rating total (in units of 30) is the rounded
target x count, spread over attempts by a latent quality shared between judges (so judges agree).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

BENCHMARK = "gem-bench"
SEED = 20250915
DATASETS = ("MT-Human", "LM-Market", "CA-Prod")
SOLUTIONS = ("Ad-Chat", "GI-R", "GIR-R", "GIR-P")
DIMENSIONS = ("accuracy", "naturalness", "personality", "trust", "notice", "click")
SUB_DIMENSIONS = {
    "accuracy": ("relevance", "accuracy"),
    "naturalness": ("interruptiveness", "authenticity"),
    "personality": ("helpfulness", "salesmanship"),
    "trust": ("credibility", "bias"),
    "notice": ("awareness", "attitude"),
    "click": ("link_awareness", "click_likelihood"),
}
N_QUERIES = {"MT-Human": 10, "LM-Market": 100, "CA-Prod": 120}
N_SAMPLES = {"MT-Human": 5, "LM-Market": 1, "CA-Prod": 1}
DEFAULT_JUDGE = "gpt-4.1-mini"
DENSITY_KS = (2, 3, 4, 5)
DENSITY_QUERIES = 30

# Table 2: RF, RC, AF, AC, IR, CTR (None: not measured)
TABLE2: dict[tuple[str, str], tuple[float, float, float, float, float, float | None]] = {
    ("MT-Human", "Ad-Chat"): (82.06, 41.12, 43.48, 62.39, 66.00, None),
    ("MT-Human", "GI-R"): (87.06, 41.70, 43.10, 66.32, 100.00, None),
    ("MT-Human", "GIR-R"): (77.08, 39.95, 41.77, 61.67, 100.00, None),
    ("MT-Human", "GIR-P"): (77.60, 40.40, 41.56, 61.72, 100.00, None),
    ("LM-Market", "Ad-Chat"): (82.26, 54.30, 42.96, 66.18, 95.82, None),
    ("LM-Market", "GI-R"): (84.09, 50.38, 44.37, 68.81, 100.00, None),
    ("LM-Market", "GIR-R"): (73.35, 51.23, 42.53, 65.60, 100.00, None),
    ("LM-Market", "GIR-P"): (74.38, 49.95, 42.15, 65.43, 100.00, None),
    ("CA-Prod", "Ad-Chat"): (85.92, 43.52, 35.99, 65.34, 100.00, 42.02),
    ("CA-Prod", "GI-R"): (86.12, 63.49, 42.10, 69.46, 100.00, 35.23),
    ("CA-Prod", "GIR-R"): (81.07, 62.58, 43.09, 66.83, 100.00, 35.23),
    ("CA-Prod", "GIR-P"): (77.87, 61.99, 42.92, 67.12, 100.00, 39.45),
}
QUANT_NAMES = ("response_flow", "response_coherence", "ad_flow", "ad_coherence", "injection", "click")

# Tables 3 (gpt-4.1-mini), 8 (qwen-max), 9 (kimi-k2), 10 (claude-3.5-haiku): six dimensions per cell.
_T3 = """
MT-Human Ad-Chat 72.60 51.00 68.40 61.80 72.60 64.20
MT-Human GI-R 83.40 39.60 79.80 68.40 74.40 72.60
MT-Human GIR-R 85.80 52.80 74.40 73.20 82.80 79.20
MT-Human GIR-P 82.80 53.40 74.40 70.20 81.60 81.00
LM-Market Ad-Chat 61.97 52.54 57.38 55.47 77.46 78.01
LM-Market GI-R 79.55 47.46 76.49 69.30 75.11 74.84
LM-Market GIR-R 80.32 62.49 71.88 70.47 80.14 77.10
LM-Market GIR-P 78.96 60.72 71.63 69.48 79.66 75.52
CA-Prod Ad-Chat 42.60 36.38 25.03 22.66 88.12 88.25
CA-Prod GI-R 53.76 26.55 44.85 36.69 80.09 85.08
CA-Prod GIR-R 59.56 34.45 46.97 36.92 84.97 87.16
CA-Prod GIR-P 59.19 35.40 47.39 36.88 84.34 87.24
"""
_T8 = """
MT-Human Ad-Chat 71.40 51.60 62.40 53.40 55.80 46.80
MT-Human GI-R 82.20 41.40 75.00 54.60 49.20 43.80
MT-Human GIR-R 81.00 53.40 64.20 52.80 63.60 55.20
MT-Human GIR-P 76.20 52.20 64.20 56.40 63.00 53.40
LM-Market Ad-Chat 61.58 46.88 53.28 44.18 63.37 66.68
LM-Market GI-R 74.21 42.69 72.78 50.66 52.40 49.70
LM-Market GIR-R 75.86 53.71 65.13 52.67 60.63 60.11
LM-Market GIR-P 74.87 51.97 64.16 52.03 56.06 57.69
CA-Prod Ad-Chat 46.80 32.20 27.71 28.22 76.05 70.93
CA-Prod GI-R 53.21 27.99 42.46 35.47 48.08 61.40
CA-Prod GIR-R 58.90 33.16 45.47 36.92 59.79 69.15
CA-Prod GIR-P 59.80 33.50 46.32 37.59 58.13 69.07
"""
_T9 = """
MT-Human Ad-Chat 65.40 43.20 56.40 49.80 25.80 40.80
MT-Human GI-R 84.60 36.60 71.40 46.20 25.20 52.80
MT-Human GIR-R 83.40 46.20 72.00 61.20 46.20 57.00
MT-Human GIR-P 81.60 46.80 70.80 54.60 36.00 52.80
LM-Market Ad-Chat 45.77 34.66 47.65 30.52 36.86 59.37
LM-Market GI-R 69.32 30.52 72.06 39.95 32.15 55.47
LM-Market GIR-R 71.51 41.36 68.89 48.92 42.51 56.83
LM-Market GIR-P 71.33 40.81 67.22 47.40 36.95 55.95
CA-Prod Ad-Chat 29.48 13.44 14.96 0.90 14.58 61.73
CA-Prod GI-R 32.43 9.62 26.80 4.20 3.78 61.89
CA-Prod GIR-R 39.01 21.25 34.93 13.28 11.98 64.04
CA-Prod GIR-P 41.17 22.52 35.28 13.10 11.50 63.63
"""
_T10 = """
MT-Human Ad-Chat 76.20 43.20 57.60 52.80 31.80 53.40
MT-Human GI-R 88.80 49.80 82.80 75.60 32.40 62.40
MT-Human GIR-R 88.20 53.40 78.60 74.40 43.20 66.60
MT-Human GIR-P 87.60 54.00 76.80 71.40 29.40 65.40
LM-Market Ad-Chat 61.40 31.56 44.19 36.09 39.64 73.10
LM-Market GI-R 83.30 40.38 78.96 65.68 43.12 67.85
LM-Market GIR-R 85.14 48.84 75.56 67.29 48.35 70.84
LM-Market GIR-P 84.50 47.99 74.62 67.11 43.44 69.23
CA-Prod Ad-Chat 42.62 7.87 10.31 5.00 24.03 80.08
CA-Prod GI-R 71.05 10.31 38.39 30.08 28.79 84.04
CA-Prod GIR-R 69.84 19.72 39.66 30.11 27.24 83.61
CA-Prod GIR-P 69.97 19.81 40.28 30.58 27.84 83.53
"""


def _parse(text: str) -> dict[tuple[str, str], tuple[float, ...]]:
    out = {}
    for line in text.strip().splitlines():
        parts = line.split()
        out[(parts[0], parts[1])] = tuple(float(v) for v in parts[2:])
    return out


JUDGE_TABLES: dict[str, dict[tuple[str, str], tuple[float, ...]]] = {
    "gpt-4.1-mini": _parse(_T3),
    "qwen-max": _parse(_T8),
    "kimi-k2": _parse(_T9),
    "claude-3.5-haiku": _parse(_T10),
}
TABLE3 = JUDGE_TABLES[DEFAULT_JUDGE]
# Table 4: overall per judge (the mean of that judge's six dimensions, as published).
TABLE4: dict[tuple[str, str], dict[str, float]] = {
    ("MT-Human", "Ad-Chat"): {"gpt-4.1-mini": 65.10, "qwen-max": 56.90, "claude-3.5-haiku": 52.50, "kimi-k2": 46.90},
    ("MT-Human", "GI-R"): {"gpt-4.1-mini": 69.70, "qwen-max": 57.70, "claude-3.5-haiku": 65.30, "kimi-k2": 52.80},
    ("MT-Human", "GIR-R"): {"gpt-4.1-mini": 74.70, "qwen-max": 61.70, "claude-3.5-haiku": 67.40, "kimi-k2": 61.00},
    ("MT-Human", "GIR-P"): {"gpt-4.1-mini": 73.90, "qwen-max": 60.90, "claude-3.5-haiku": 64.10, "kimi-k2": 57.10},
    ("LM-Market", "Ad-Chat"): {"gpt-4.1-mini": 63.81, "qwen-max": 55.99, "claude-3.5-haiku": 47.66, "kimi-k2": 42.47},
    ("LM-Market", "GI-R"): {"gpt-4.1-mini": 70.46, "qwen-max": 57.07, "claude-3.5-haiku": 63.21, "kimi-k2": 49.91},
    ("LM-Market", "GIR-R"): {"gpt-4.1-mini": 73.73, "qwen-max": 61.35, "claude-3.5-haiku": 66.00, "kimi-k2": 55.00},
    ("LM-Market", "GIR-P"): {"gpt-4.1-mini": 72.66, "qwen-max": 59.46, "claude-3.5-haiku": 64.48, "kimi-k2": 53.28},
    ("CA-Prod", "Ad-Chat"): {"gpt-4.1-mini": 50.51, "qwen-max": 46.99, "claude-3.5-haiku": 28.32, "kimi-k2": 22.51},
    ("CA-Prod", "GI-R"): {"gpt-4.1-mini": 54.50, "qwen-max": 44.77, "claude-3.5-haiku": 43.78, "kimi-k2": 23.12},
    ("CA-Prod", "GIR-R"): {"gpt-4.1-mini": 58.34, "qwen-max": 50.57, "claude-3.5-haiku": 45.03, "kimi-k2": 30.75},
    ("CA-Prod", "GIR-P"): {"gpt-4.1-mini": 58.41, "qwen-max": 50.73, "claude-3.5-haiku": 45.34, "kimi-k2": 31.20},
}
# Table 6: ITTFT, OTTFT (overall = 0.5 x ITTFT + OTTFT).
TABLE6: dict[tuple[str, str], tuple[float, float, float]] = {
    ("MT-Human", "Ad-Chat"): (686.03, 523.80, 866.82),
    ("LM-Market", "Ad-Chat"): (897.46, 456.56, 905.29),
    ("CA-Prod", "Ad-Chat"): (2911.49, 217.68, 1673.43),
    ("MT-Human", "GI-R"): (125.83, 503.73, 566.65),
    ("LM-Market", "GI-R"): (127.06, 411.22, 474.75),
    ("CA-Prod", "GI-R"): (108.94, 138.31, 192.78),
    ("MT-Human", "GIR-R"): (1180.26, 1030.23, 1620.36),
    ("LM-Market", "GIR-R"): (1106.29, 849.73, 1402.88),
    ("CA-Prod", "GIR-R"): (968.72, 424.40, 908.76),
    ("MT-Human", "GIR-P"): (1192.96, 1036.13, 1632.61),
    ("LM-Market", "GIR-P"): (1106.67, 850.21, 1403.55),
    ("CA-Prod", "GIR-P"): (953.16, 413.09, 889.67),
}
HUMAN_QUERIES = {"MT-Human": 2, "LM-Market": 13, "CA-Prod": 5}
HUMAN_SOLUTIONS = ("Ad-Chat", "GI-R")
N_HUMAN_RATERS = 157
HUMAN_QUERIES_PER_RATER = 10

# ---------------------------------------------------------------------------------------------
# Text material: topics, sentences, ads
# ---------------------------------------------------------------------------------------------

TOPICS: dict[str, list[dict[str, Any]]] = {
    "MT-Human": [
        {
            "q": "What are some business etiquette norms when doing business in {x}?",
            "x": ["Japan", "Germany", "Brazil", "India", "Korea"],
            "s": [
                "Punctuality is taken very seriously in {x}, so arrive a few minutes early to every meeting.",
                "Exchange business cards with both hands and take a moment to read the card you receive.",
                "Dress conservatively; dark suits remain the safe choice for first meetings in {x}.",
                "Hierarchy matters, so address the most senior person first and wait to be seated.",
                "Small gifts are appreciated, but avoid anything too expensive or flashy.",
                "Decisions often take time because consensus is built before a formal answer is given.",
                "Follow up with a short thank-you note after the meeting to show respect.",
            ],
            "ads": [
                (
                    "Rosetta Stone",
                    "https://www.rosettastone.com/",
                    "offers language courses that help you learn local phrases before a business trip",
                ),
                (
                    "Expedia",
                    "https://www.expedia.com/",
                    "lets you book flights and hotels for business travel in one place",
                ),
            ],
        },
        {
            "q": "Describe the most influential {x} and why it still matters today.",
            "x": [
                "novel of the 19th century",
                "painting of the Renaissance",
                "philosophical school of antiquity",
                "poem of the modern era",
                "film movement of the 1960s",
            ],
            "s": [
                "The work reshaped how later artists and thinkers approached their craft.",
                "Its themes of identity and change still speak to readers and viewers today.",
                "Scholars point to its innovative structure as a turning point in the history of the {x}.",
                "It also provoked debate when it first appeared, which widened its audience.",
                "Many schools still include it in their curriculum as a reference point.",
                "Reading it alongside its historical context reveals how radical it was.",
                "Its influence can be traced in contemporary culture, from novels to advertising.",
            ],
            "ads": [
                (
                    "Audible",
                    "https://www.audible.com/",
                    "offers audiobooks and lectures on classic works of literature and history",
                ),
                ("MasterClass", "https://www.masterclass.com/", "has video lessons from leading writers and artists"),
            ],
        },
    ],
    "LM-Market": [
        {
            "q": "Plan a {x} trip for two people on a moderate budget.",
            "x": ["three-day Seattle", "week-long Lisbon", "weekend Zurich", "five-day Kyoto", "four-day Barcelona"],
            "s": [
                "Start the {x} trip by exploring the historic centre on foot to get your bearings.",
                "Public transport passes usually save money compared with single tickets.",
                "Book the most popular museum in advance, since weekend slots sell out quickly.",
                "For dinner, try the neighbourhood markets where locals eat at reasonable prices.",
                "Spend one afternoon on a day trip to a nearby lake, park or coastal town.",
                "Keep an evening free for a sunset viewpoint, which costs nothing and is memorable.",
                "Pack comfortable shoes, because most sights are best reached on foot.",
            ],
            "ads": [
                (
                    "Citymapper",
                    "https://citymapper.com/",
                    "gives real-time departures and multimodal route planning for urban travel",
                ),
                ("Booking.com", "https://www.booking.com/", "lists hotels and apartments with free cancellation"),
                ("GetYourGuide", "https://www.getyourguide.com/", "sells skip-the-line tickets and guided tours"),
            ],
        },
        {
            "q": "Suggest a healthy {x} recipe I can make in under 30 minutes.",
            "x": ["vegetarian dinner", "high-protein lunch", "detox breakfast", "gluten-free dinner", "low-carb lunch"],
            "s": [
                "A quick {x} option is a vegetable stir-fry with tofu or chicken and brown rice.",
                "Prepare the vegetables first so that the cooking itself takes only ten minutes.",
                "Use a hot pan and a little oil to keep the vegetables crisp and colourful.",
                "Season with garlic, ginger and a splash of soy sauce for depth of flavour.",
                "Finish with fresh herbs or a squeeze of lime to brighten the dish.",
                "Leftovers keep well in the fridge for two days and make a good lunch.",
                "Serve with a simple salad to add fibre and texture to the meal.",
            ],
            "ads": [
                (
                    "HelloFresh",
                    "https://www.hellofresh.com/",
                    "delivers pre-portioned ingredients and easy recipes to your door",
                ),
                (
                    "Instant Pot",
                    "https://www.instantpot.com/",
                    "is a multi-cooker that cuts cooking time for healthy meals",
                ),
            ],
        },
        {
            "q": "Compare {x} for a small team.",
            "x": [
                "project management tools",
                "note-taking apps",
                "video conferencing tools",
                "password managers",
                "CRM systems",
            ],
            "s": [
                "When comparing {x}, start from the workflows your team already uses every day.",
                "Pricing per seat varies widely, so estimate the cost for your team size over a year.",
                "Integrations with email, calendars and chat often decide how much the tool gets used.",
                "Check whether the free tier has limits on storage, users or history.",
                "Security features such as single sign-on and audit logs matter as the team grows.",
                "Run a two-week pilot with a few colleagues before committing to a yearly plan.",
                "Good onboarding material shortens the time until everyone is productive.",
            ],
            "ads": [
                ("Notion", "https://www.notion.so/", "combines notes, documents and project boards in one workspace"),
                ("1Password", "https://1password.com/", "keeps team passwords in shared, encrypted vaults"),
            ],
        },
    ],
    "CA-Prod": [
        {
            "q": "{x}",
            "x": ["cordless lawn mower", "electric hedge trimmer", "garden hose reel", "leaf blower battery"],
            "s": [
                "A {x} is a popular choice for keeping a garden tidy with little effort.",
                "Battery models are quieter and need less maintenance than petrol ones.",
                "Look at run time, charging time and weight before choosing a model.",
                "Prices range from budget options to professional-grade equipment.",
                "Reviews highlight durability and warranty length as key differences.",
            ],
            "ads": [("Greenworks", "https://www.greenworkstools.com/", "makes battery-powered lawn and garden tools")],
        },
        {
            "q": "{x}",
            "x": ["women's slip-on shoes", "slip-on sneakers for walking", "summer maxi dress", "floral wrap dress"],
            "s": [
                "{x} combine comfort with an easy, casual style.",
                "Breathable materials keep them comfortable on warm days.",
                "Sizes can run small, so check the size guide before ordering.",
                "Neutral colours match most outfits and seasons.",
                "Many retailers offer free returns if the fit is not right.",
            ],
            "ads": [("Zappos", "https://www.zappos.com/", "sells shoes and clothing with free shipping and returns")],
        },
        {
            "q": "{x}",
            "x": ["vitamin D supplement", "protein powder for women", "omega-3 fish oil", "magnesium supplement"],
            "s": [
                "A {x} is commonly used to support everyday health.",
                "Check the dosage and the form of the active ingredient on the label.",
                "Third-party testing is a useful sign of quality and purity.",
                "Talk to a doctor before combining supplements with medication.",
                "Prices per serving vary more than the headline price suggests.",
            ],
            "ads": [("Nature Made", "https://www.naturemade.com/", "offers USP-verified vitamins and supplements")],
        },
        {
            "q": "{x}",
            "x": ["android tablet for kids", "budget android smartphone", "modern table lamp", "minimalist wall clock"],
            "s": [
                "The {x} category offers many models at different price points.",
                "Compare battery life, screen quality and build before buying.",
                "Software updates and support matter for how long a device stays useful.",
                "Look for protective cases or warranties for everyday use.",
                "Customer reviews point out reliability issues that specifications hide.",
            ],
            "ads": [
                ("Samsung", "https://www.samsung.com/", "makes Galaxy tablets and phones with long software support")
            ],
        },
    ],
}


def _ad_sentence(solution: str, name: str, url: str, desc: str, topic_phrase: str) -> list[str]:
    """The ad sentence(s) each solution writes: Ad-Chat sells, GI-R pastes, GIR-* rewrites smoothly."""
    if solution == "Ad-Chat":
        return [
            f"If you want the best experience with {topic_phrase}, {name} might be a great choice!",
            f"{name} {desc}, so visit their website at {url} to get started today.",
        ]
    if solution == "GI-R":
        return [f"{name} ({url}) {desc}."]
    return [f"For {topic_phrase}, you can also check out [{name}]({url}), which {desc}."]


# ---------------------------------------------------------------------------------------------
# Allocation helpers
# ---------------------------------------------------------------------------------------------


def spread_levels(target: float, latent: np.ndarray, *, levels: int = 3, step: float = 30.0) -> np.ndarray:
    """Integer levels 0..levels (times ``step``) whose mean is the nearest feasible to ``target``.

    Attempts with a higher ``latent`` get higher levels; the total is exact (rounded target x count).
    """
    n = len(latent)
    total = int(round(target * n / step))
    total = min(max(total, 0), levels * n)
    z = (latent - latent.mean()) / (latent.std() + 1e-9)
    want = np.clip(target / step + 0.9 * z, 0, levels)
    out = np.clip(np.round(want), 0, levels).astype(int)
    resid = want - out
    while out.sum() < total:
        cand = np.where(out < levels)[0]
        i = cand[np.argmax(resid[cand])]
        out[i] += 1
        resid[i] -= 1
    while out.sum() > total:
        cand = np.where(out > 0)[0]
        i = cand[np.argmin(resid[cand])]
        out[i] -= 1
        resid[i] += 1
    return out


def exact_mean_values(
    target: float, n: int, rng: np.random.Generator, *, sd: float, lo: float = 0.0, hi: float = 1.0, decimals: int = 4
) -> np.ndarray:
    """``n`` continuous values in [lo, hi] whose mean is ``target`` (to the rounding)."""
    vals = target + rng.normal(0, sd, n)
    for _ in range(20):
        vals = np.clip(vals - (vals.mean() - target), lo, hi)
    return np.round(vals, decimals)


def exact_binary(rate: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """0/1 values with the nearest feasible share to ``rate``."""
    k = int(round(rate * n))
    out = np.zeros(n, dtype=int)
    out[rng.choice(n, k, replace=False)] = 1
    return out


def exact_int_mean(target: float, n: int, rng: np.random.Generator, *, sd: float) -> np.ndarray:
    """Non-negative integers whose sum is round(target x n)."""
    vals = np.maximum(0, np.round(target + rng.normal(0, sd, n))).astype(int)
    total = int(round(target * n))
    while vals.sum() != total:
        diff = total - int(vals.sum())
        idx = rng.choice(n, min(abs(diff), n), replace=False)
        vals[idx] = np.maximum(0, vals[idx] + np.sign(diff))
    return vals


def sub_levels(score: int, rng: np.random.Generator) -> tuple[int, int]:
    """Two bad/moderate/good levels (0/1/2) that aggregate to ``score`` units (0..3) by the rubric."""
    options = {0: [(0, 0)], 1: [(0, 1), (1, 0)], 2: [(1, 1), (0, 2), (2, 0)], 3: [(2, 2)]}[score]
    return options[int(rng.integers(len(options)))]


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------


def _tasks(rng: np.random.Generator) -> list[dict[str, Any]]:
    tasks = []
    for dataset in DATASETS:
        topics = TOPICS[dataset]
        for i in range(N_QUERIES[dataset]):
            topic = topics[i % len(topics)]
            x = topic["x"][int(rng.integers(len(topic["x"])))]
            prefix = {"MT-Human": "mt", "LM-Market": "lm", "CA-Prod": "ca"}[dataset]
            tasks.append(
                {
                    "task_id": f"{prefix}-{i + 1:03d}",
                    "dataset": dataset,
                    "topic": topics.index(topic),
                    "x": x,
                    "query": topic["q"].format(x=x),
                }
            )
    return tasks


def _response(
    task: dict[str, Any], solution: str, k: int, *, has_ad: bool, rng: np.random.Generator
) -> tuple[str, list[dict[str, str]]]:
    topic = TOPICS[task["dataset"]][task["topic"]]
    pool = [s.format(x=task["x"]) for s in topic["s"]]
    n = int(rng.integers(4, len(pool) + 1))
    body = [pool[i] for i in sorted(rng.choice(len(pool), n, replace=False))]
    body[0] = body[0][0].upper() + body[0][1:]
    ads = []
    order = rng.permutation(len(topic["ads"]))
    for j in range(k):
        name, url, desc = topic["ads"][order[j % len(order)]]
        if j >= len(order):  # more ads than the topic has: reuse a brand with another landing page
            url = f"{url}deals/{j}"
        ad_lines = _ad_sentence(solution, name, url, desc, task["x"])
        ads.append({"name": name, "url": url, "text": " ".join(ad_lines)})
        if has_ad:
            if solution == "Ad-Chat":
                pos = len(body) if rng.random() < 0.6 else int(rng.integers(1, len(body)))
            else:
                pos = int(rng.integers(1, len(body)))
            body[pos:pos] = ad_lines
    return " ".join(body), ads


def _run(run_id: str, agent: str, *, family: str, extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "record": "run",
        "run_id": run_id,
        "benchmark": BENCHMARK,
        "agent": agent,
        "family": family,
        "agent_version": "doubao-1.5-lite-32k",
        "kind": "framework",
        "eval_date": "2025-09-15",
        "judge": DEFAULT_JUDGE,
        **extra,
    }


def run_id_for(solution: str, k: int = 1) -> str:
    """``gem-bench-gir-r`` (k = 1) or ``gem-bench-gir-r-k3``."""
    base = f"{BENCHMARK}-{solution.lower()}"
    return base if k == 1 else f"{base}-k{k}"


def _cell_attempts(tasks: list[dict[str, Any]], dataset: str) -> list[tuple[dict[str, Any], int]]:
    return [(t, s) for t in tasks if t["dataset"] == dataset for s in range(N_SAMPLES[dataset])]


def _rating(run_id: str, task_id: str, sample: int, rater: str, kind: str, dim: str, value: float) -> dict[str, Any]:
    return {
        "record": "rating",
        "run_id": run_id,
        "task_id": task_id,
        "sample": sample,
        "rater": rater,
        "rater_kind": kind,
        "dimension": dim,
        "value": value,
    }


def build_records(seed: int = SEED) -> list[dict[str, Any]]:
    """Every record of the GEM-Bench demo, in ingest order."""
    rng = np.random.default_rng(seed)
    recs: list[dict[str, Any]] = [
        {
            "record": "benchmark",
            "benchmark": BENCHMARK,
            "version": "2025-09",
            "scoring": "continuous",
            "pass_threshold": 0.5,
            "gem": True,
            "description": "GEM-Bench: ad-injected response generation (demo reconstruction of Tables 2-6)",
        }
    ]
    tasks = _tasks(rng)
    for t in tasks:
        recs.append(
            {
                "record": "task",
                "benchmark": BENCHMARK,
                "task_id": t["task_id"],
                "category": t["dataset"],
                "query": t["query"],
            }
        )
    # Baseline: the ad-free response's own tokens; solutions add Table 6's extra tokens on top.
    recs.append(_run(run_id_for("ad-free"), "Ad-free", family="baseline", extra={"gem_role": "baseline"}))
    base_tokens: dict[tuple[str, int], tuple[int, int]] = {}
    for dataset in DATASETS:
        for t, s in _cell_attempts(tasks, dataset):
            tok = (int(rng.integers(25, 90)), int(rng.integers(180, 480)))
            base_tokens[(t["task_id"], s)] = tok
            text, _ = _response(t, "GI-R", 0, has_ad=False, rng=rng)
            recs.append(
                {
                    "record": "attempt",
                    "run_id": run_id_for("ad-free"),
                    "task_id": t["task_id"],
                    "sample": s,
                    "score": 0.5,
                    "answer": text,
                    "input_tokens": tok[0],
                    "output_tokens": tok[1],
                    "metrics": {"injection": 0},
                    "ads": [],
                }
            )
    latent = {(t["task_id"], s): float(rng.normal()) for t in tasks for s in range(N_SAMPLES[t["dataset"]])}
    ratings: list[dict[str, Any]] = []
    llm_main: dict[tuple[str, str, int, str], int] = {}
    for solution in SOLUTIONS:
        run_id = run_id_for(solution)
        recs.append(
            _run(
                run_id, solution, family="Ad-Chat" if solution == "Ad-Chat" else "Ad-LLM", extra={"ads_per_response": 1}
            )
        )
        for dataset in DATASETS:
            cell = _cell_attempts(tasks, dataset)
            n = len(cell)
            rf, rc, af, ac, ir, ctr = TABLE2[(dataset, solution)]
            has_ad = exact_binary(ir / 100, n, rng)
            n_ad = int(has_ad.sum())
            q = {
                "response_flow": exact_mean_values(rf / 100, n, rng, sd=0.05),
                "response_coherence": exact_mean_values(rc / 100, n, rng, sd=0.05),
            }
            ad_q = {
                "ad_flow": exact_mean_values(af / 100, n_ad, rng, sd=0.06),
                "ad_coherence": exact_mean_values(ac / 100, n_ad, rng, sd=0.05),
            }
            clicks = exact_binary(ctr / 100, n_ad, rng) if ctr is not None else None
            ittft, ottft, _ = TABLE6[(dataset, solution)]
            extra_in = exact_int_mean(ittft, n, rng, sd=0.15 * ittft)
            extra_out = exact_int_mean(ottft, n, rng, sd=0.15 * ottft)
            judge_scores = {}
            for judge, table in JUDGE_TABLES.items():
                for d, dim in enumerate(DIMENSIONS):
                    lat = np.array([latent[(t["task_id"], s)] for t, s in cell]) + rng.normal(0, 0.6, n)
                    judge_scores[(judge, dim)] = spread_levels(table[(dataset, solution)][d], lat)
            j_ad = 0
            for i, (t, s) in enumerate(cell):
                text, ads = _response(t, solution, 1, has_ad=bool(has_ad[i]), rng=rng)
                metrics = {name: float(v[i]) for name, v in q.items()}
                metrics["injection"] = int(has_ad[i])
                if has_ad[i]:
                    metrics.update({name: float(v[j_ad]) for name, v in ad_q.items()})
                    if clicks is not None:
                        metrics["click"] = int(clicks[j_ad])
                    j_ad += 1
                main = [int(judge_scores[(DEFAULT_JUDGE, dim)][i]) * 30 for dim in DIMENSIONS]
                b_in, b_out = base_tokens[(t["task_id"], s)]
                recs.append(
                    {
                        "record": "attempt",
                        "run_id": run_id,
                        "task_id": t["task_id"],
                        "sample": s,
                        "score": round(sum(main) / len(main) / 100, 4),
                        "answer": text,
                        "input_tokens": b_in + int(extra_in[i]),
                        "output_tokens": b_out + int(extra_out[i]),
                        "metrics": metrics,
                        "ads": ads,
                    }
                )
                for (judge, dim), levels in judge_scores.items():
                    value = int(levels[i]) * 30
                    ratings.append(_rating(run_id, t["task_id"], s, judge, "llm", dim, value))
                    if judge == DEFAULT_JUDGE:
                        llm_main[(run_id, t["task_id"], s, dim)] = value
                        if dataset == "MT-Human":
                            for sub, lvl in zip(SUB_DIMENSIONS[dim], sub_levels(int(levels[i]), rng), strict=True):
                                ratings.append(_rating(run_id, t["task_id"], s, judge, "llm", f"{dim}/{sub}", lvl))
    recs.extend(_density(tasks, rng, ratings))
    recs.extend(ratings)
    recs.extend(_humans(tasks, llm_main, rng))
    return recs


def density_targets(k: int) -> dict[str, float]:
    """Illustrative Figure 3 targets for GIR-R on LM-Market with k ads: satisfaction falls, click peaks at k=3."""
    base = dict(zip(DIMENSIONS, TABLE3[("LM-Market", "GIR-R")], strict=True))
    out = {dim: base[dim] - 4.0 * (k - 1) for dim in ("accuracy", "naturalness", "personality", "trust")}
    out["notice"] = base["notice"] - 2.5 * (k - 1)
    out["click"] = base["click"] + {1: 0.0, 2: 3.0, 3: 4.0, 4: 2.0, 5: 0.5}[k]
    return out


def _density(
    tasks: list[dict[str, Any]], rng: np.random.Generator, ratings: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = []
    lm = [t for t in tasks if t["dataset"] == "LM-Market"][:DENSITY_QUERIES]
    rf, rc, af, ac, _, _ = TABLE2[("LM-Market", "GIR-R")]
    for k in DENSITY_KS:
        run_id = run_id_for("GIR-R", k)
        recs.append(_run(run_id, "GIR-R", family="Ad-LLM", extra={"ads_per_response": k}))
        n = len(lm)
        scores = {dim: spread_levels(v, rng.normal(size=n)) for dim, v in density_targets(k).items()}
        ittft, ottft, _ = TABLE6[("LM-Market", "GIR-R")]
        for i, t in enumerate(lm):
            text, ads = _response(t, "GIR-R", k, has_ad=True, rng=rng)
            metrics = {
                "response_flow": round(rf / 100 - 0.02 * (k - 1) + float(rng.normal(0, 0.03)), 4),
                "response_coherence": round(rc / 100 - 0.015 * (k - 1) + float(rng.normal(0, 0.03)), 4),
                "ad_flow": round(af / 100 - 0.01 * (k - 1) + float(rng.normal(0, 0.03)), 4),
                "ad_coherence": round(ac / 100 - 0.01 * (k - 1) + float(rng.normal(0, 0.03)), 4),
                "injection": 1,
            }
            main = [int(scores[dim][i]) * 30 for dim in DIMENSIONS]
            recs.append(
                {
                    "record": "attempt",
                    "run_id": run_id,
                    "task_id": t["task_id"],
                    "sample": 0,
                    "score": round(sum(main) / len(main) / 100, 4),
                    "answer": text,
                    "input_tokens": int(60 + ittft * (1 + 0.3 * (k - 1)) + rng.normal(0, 50)),
                    "output_tokens": int(300 + ottft * (1 + 0.2 * (k - 1)) + rng.normal(0, 40)),
                    "metrics": metrics,
                    "ads": ads,
                }
            )
            for dim, value in zip(DIMENSIONS, main, strict=True):
                ratings.append(_rating(run_id, t["task_id"], 0, DEFAULT_JUDGE, "llm", dim, value))
    return recs


def _humans(
    tasks: list[dict[str, Any]], llm: dict[tuple[str, str, int, str], int], rng: np.random.Generator
) -> list[dict[str, Any]]:
    """157 raters, each one dimension x 10 of the 20 study queries x both responses (section 4.2).

    A human rating is the default judge's rating plus an item effect that people share but the judge
    does not (so humans agree with each other more than with the judge) plus personal noise.
    """
    study = [t for d in DATASETS for t in [x for x in tasks if x["dataset"] == d][: HUMAN_QUERIES[d]]]
    items = [(run_id_for(sol), t["task_id"]) for t in study for sol in HUMAN_SOLUTIONS]
    shared = {(r, tid, dim): float(rng.normal(0, 21.0)) for r, tid in items for dim in DIMENSIONS}
    recs = []
    for h in range(N_HUMAN_RATERS):
        rater = f"human-{h + 1:03d}"
        dim = DIMENSIONS[h % len(DIMENSIONS)]
        for t in [study[i] for i in sorted(rng.choice(len(study), HUMAN_QUERIES_PER_RATER, replace=False))]:
            for sol in HUMAN_SOLUTIONS:
                run_id = run_id_for(sol)
                value = llm[(run_id, t["task_id"], 0, dim)] + shared[(run_id, t["task_id"], dim)] + rng.normal(0, 30.0)
                value = int(np.clip(np.round(value / 30), 0, 3)) * 30
                recs.append(_rating(run_id, t["task_id"], 0, rater, "human", dim, value))
    return recs


def generate(out: Path) -> list[Path]:
    """Write ``gembench.jsonl`` into ``out`` and return it (a GENERATORS entry)."""
    path = out / "gembench.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for rec in build_records():
            fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
    return [path]
