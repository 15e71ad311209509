"""jaxcontam.stats.auc and jaxcontam.stats.blind: the AUC equals scipy's Mann-Whitney U / (n m) and sklearn's
roc_auc_score, its bootstrap interval scipy's percentile bootstrap; the blind baseline's naive Bayes equals sklearn's
CountVectorizer + MultinomialNB fold by fold, holds 1/2 at its nominal rate on sets drawn alike, and separates sets
drawn apart."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from jaxcontam.stats.auc import auc, mean_auc
from jaxcontam.stats.blind import blind_baseline, deal_folds, ngrams, out_of_fold_log_odds
from jaxcontam.stats.validation import StatsInputError

sklearn = pytest.importorskip("sklearn")


def test_auc_is_scipys_and_sklearns():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=60), 1)  # ties
    labels = np.arange(60) < 25
    scores[labels] += 0.5
    result = auc(scores, labels, resamples=4000, seed=1)
    u = scipy_stats.mannwhitneyu(scores[labels], scores[~labels]).statistic
    assert result.statistic == pytest.approx(u / (25 * 35))
    assert result.statistic == pytest.approx(roc_auc_score(labels, scores))
    theirs = scipy_stats.bootstrap(
        (scores[labels], scores[~labels]),
        lambda a, b, axis: ((a[..., :, None] > b[..., None, :]) + 0.5 * (a[..., :, None] == b[..., None, :])).mean(
            axis=(-2, -1)
        ),
        method="percentile",
        n_resamples=4000,
        rng=2,
    ).confidence_interval
    ours = result.confidence_interval(0.95)
    assert ours.low == pytest.approx(theirs.low, abs=0.02) and ours.high == pytest.approx(theirs.high, abs=0.02)


def test_auc_draws_each_group_as_rng_choice_does():
    """Without clusters each replicate is the AUC of `rng.choice` draws of each group's items, in input order, so a
    script's bootstrap written as those draws (experiments/real_model, before it used the library) is reproduced."""
    rng = np.random.default_rng(3)
    scores, labels = rng.normal(size=23), rng.random(23) < 0.4  # > 10 items: string cluster keys would sort apart
    result = auc(scores, labels, resamples=50, seed=7)
    draw = np.random.default_rng(7)
    positive, negative = scores[labels], scores[~labels]
    for replicate in result.replicates:
        a, b = draw.choice(positive, positive.size), draw.choice(negative, negative.size)
        wins = (a[:, None] > b[None, :]) + 0.5 * (a[:, None] == b[None, :])
        assert replicate == pytest.approx(wins.mean(), abs=1e-12)


def test_auc_clusters_resample_together_and_bad_input():
    scores = np.array([3.0, 3.0, 0.0, 1.0, 2.0, 0.5])
    labels = np.array([True, True, True, False, False, False])
    clustered = auc(scores, labels, clusters=["a", "a", "b", "c", "d", "e"], resamples=500)
    assert clustered.n_clusters == 5
    assert clustered.statistic == auc(scores, labels).statistic
    # two positive clusters: a replicate holds cluster a twice, b twice, or one of each
    assert set(np.unique(np.round(clustered.replicates * 9))) <= set(range(10))
    with pytest.raises(StatsInputError, match="both groups"):
        auc([1.0, 2.0], [True, True])
    with pytest.raises(StatsInputError, match="clusters must lie within one group"):
        auc(scores, labels, clusters=["a", "a", "b", "b", "c", "d"])


def test_mean_auc_is_the_mean_of_scipys_per_model_aucs_and_resamples_items_in_both_models_alike():
    """Two models over the same 40 items with complementary labels (the two draws of a half split): the statistic is
    the mean of each model's Mann-Whitney U / (n m); each replicate is that mean over one multinomial draw of the
    items, the same draw in both models (so a replicate computed by hand from its drawn items agrees)."""
    rng = np.random.default_rng(5)
    labels = np.arange(40) < 20
    first, second = np.round(rng.normal(size=40), 1), np.round(rng.normal(size=40), 1)
    first[labels] += 0.8
    second[~labels] += 0.3
    second[3] = np.nan  # left out in its model only
    result = mean_auc([first, second], [labels, ~labels], resamples=300, seed=4)
    expected = []
    for scores, flags in ((first, labels), (second, ~labels)):
        keep = np.isfinite(scores)
        positive, negative = scores[flags & keep], scores[~flags & keep]
        expected.append(scipy_stats.mannwhitneyu(positive, negative).statistic / (positive.size * negative.size))
    assert result.aucs == pytest.approx(tuple(expected)) and result.statistic == pytest.approx(np.mean(expected))
    draw = np.random.default_rng(4).integers(0, 40, (300, 40))  # resample_counts' draws: one chunk at this size
    for replicate, drawn in list(zip(result.replicates, draw, strict=True))[:20]:
        by_model = []
        for scores, flags in ((first, labels), (second, ~labels)):
            picked = drawn[np.isfinite(scores[drawn])]
            positive, negative = scores[picked[flags[picked]]], scores[picked[~flags[picked]]]
            by_model.append(((positive[:, None] > negative) + 0.5 * (positive[:, None] == negative)).mean())
        assert replicate == pytest.approx(np.mean(by_model), abs=1e-12)
    interval = result.confidence_interval(0.95)
    assert interval.low < result.statistic < interval.high
    with pytest.raises(StatsInputError, match="same items"):
        mean_auc([first, second[:30]], [labels, labels[:30]])
    with pytest.raises(StatsInputError, match="both groups"):
        mean_auc([first], [np.ones(40, bool)])


def _texts(rng, n, p, vocabulary):
    return ["  ".join(rng.choice(vocabulary, size=rng.integers(4, 20), p=p)) for _ in range(n)]


@pytest.mark.parametrize("analyzer, ngram_range", [("word", (1, 2)), ("char", (2, 4))])
def test_naive_bayes_is_sklearns_fold_by_fold(analyzer, ngram_range):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.naive_bayes import MultinomialNB

    rng = np.random.default_rng(1)
    vocabulary = [f"w{i}x" for i in range(80)]
    first = _texts(rng, 23, rng.dirichlet(np.ones(80)), vocabulary)
    second = _texts(rng, 17, rng.dirichlet(np.ones(80)), vocabulary)
    ours = out_of_fold_log_odds(first, second, folds=4, analyzer=analyzer, ngram_range=ngram_range, seed=5)
    texts, is_first = np.array(first + second), np.arange(40) < 23
    fold = deal_folds(is_first, 4, np.random.default_rng(5))
    theirs = np.empty(40)
    for k in range(4):
        pattern = {"token_pattern": r"(?u)\b\w+\b"} if analyzer == "word" else {}
        vectorizer = CountVectorizer(analyzer=analyzer, ngram_range=ngram_range, **pattern)
        x = vectorizer.fit_transform(texts[fold != k])
        model = MultinomialNB(alpha=1.0).fit(x, is_first[fold != k])
        joint = model.predict_joint_log_proba(vectorizer.transform(texts[fold == k]))
        theirs[fold == k] = joint[:, 1] - joint[:, 0]  # classes sorted: False, True
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


def test_sets_drawn_alike_give_one_half_at_the_nominal_rate_and_sets_drawn_apart_separate():
    rng = np.random.default_rng(2)
    vocabulary = [f"w{i}" for i in range(60)]
    p = rng.dirichlet(np.ones(60))
    covered, statistics, rejected = [], [], []
    for seed in range(40):
        result = blind_baseline(
            _texts(rng, 20, p, vocabulary), _texts(rng, 20, p, vocabulary), seed=seed, permutations=49
        )
        interval = result.confidence_interval(0.9)
        covered.append(interval.low <= 0.5 <= interval.high)
        statistics.append(result.statistic)
        rejected.append(result.pvalue <= 0.05)
    assert 0.75 <= np.mean(covered)  # nominal 0.90; 40 data sets: the 99% binomial band reaches 0.775
    assert abs(np.mean(statistics) - 0.5) < 0.05
    assert np.mean(rejected) <= 0.15
    apart = blind_baseline(
        _texts(rng, 20, p, vocabulary), _texts(rng, 20, rng.dirichlet(np.ones(60)), vocabulary), permutations=99
    )
    assert apart.statistic > 0.95 and apart.pvalue == pytest.approx(0.01)
    assert apart.confidence_interval(0.95).low > 0.5


def test_ngrams_and_bad_settings():
    assert ngrams("The cat  sat", "word", (1, 2)) == ["the", "cat", "sat", "the cat", "cat sat"]
    assert ngrams("Ab  c", "char", (2, 2)) == ["ab", "b ", " c"]
    with pytest.raises(StatsInputError, match="analyzer"):
        ngrams("x", "bytes")
    with pytest.raises(StatsInputError, match="at least 5 items in each set"):
        blind_baseline(["a b"] * 4, ["c d"] * 9)
    with pytest.raises(StatsInputError, match="smoothing"):
        blind_baseline(["a b"] * 5, ["c d"] * 5, smoothing=0.0)
