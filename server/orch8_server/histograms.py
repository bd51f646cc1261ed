"""A lean Prometheus histogram for the request and claim paths (P-TEL-6).

prometheus_client's Histogram takes two locks and scans its buckets on every observe
(about 2.5 us); these are observed once per request and per claimed task, always on the
event loop's thread, and read by /metrics on that same thread. So a series is a list of
per-bucket counts found by bisection and a running sum, lock-free (about 0.3 us), and the
collector renders the cumulative form Prometheus expects when scraped.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from itertools import accumulate

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector


class Series:
    """One label set's counts: counts[i] holds values in (bounds[i-1], bounds[i]]."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: list[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value


class LeanHistogram(Collector):
    """A histogram family whose series are looked up by their label values (in order)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self.bounds = sorted(float(b) for b in buckets)
        self._les = [repr(b) for b in self.bounds] + ["+Inf"]  # as Prometheus writes them
        self._series: dict[tuple[str, ...], Series] = {}
        registry.register(self)

    def labels(self, *values: str) -> Series:
        series = self._series.get(values)
        if series is None:
            series = self._series[values] = Series(self.bounds)
        return series

    def describe(self) -> list[Metric]:
        return [HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, series in self._series.items():
            cumulative = list(accumulate(series.counts))
            family.add_metric(
                list(values), list(zip(self._les, cumulative, strict=True)), series.sum
            )
        yield family
