#!/usr/bin/env python3
"""Reference figures for the graph generators of world/social_graph.cpp.

networkx's generators, run over seeds 1..SEEDS: the mean and standard
deviation across seeds of each figure test_social_graph.cpp compares its own
generators' against (the same algorithms with another random source, so the
same distributions, not the same edges). Writes networkx_reference.json next
to this file; with --check, fails when that file differs from a fresh run.
"""
import json
import os
import statistics
import sys

try:
    import networkx as nx
except ImportError:
    print("troupe-skip: the Python module networkx is not installed (Debian package python3-networkx)")
    sys.exit(77)  # ctest's skip

SEEDS = 20


def summary(values):
    return {"mean": round(statistics.fmean(values), 6), "sd": round(statistics.pstdev(values), 6)}


def figures(make, measures):
    graphs = [make(seed) for seed in range(1, SEEDS + 1)]
    return {name: summary([f(g) for g in graphs]) for name, f in measures.items()}


def max_degree(g):
    return max(d for _, d in g.degree())


def degree_variance(g):
    return statistics.pvariance([d for _, d in g.degree()])


def share_of_degree(k):
    return lambda g: sum(1 for _, d in g.degree() if d == k) / g.number_of_nodes()


def reference():
    return {
        "seeds": SEEDS,
        "barabasi_albert": {
            "n": 2000, "m": 3,
            **figures(lambda s: nx.barabasi_albert_graph(2000, 3, seed=s),
                      {"edges": nx.number_of_edges, "max_degree": max_degree,
                       "share_degree_m": share_of_degree(3), "clustering": nx.average_clustering}),
        },
        "erdos_renyi": {
            "n": 2000, "p": 0.005,
            **figures(lambda s: nx.fast_gnp_random_graph(2000, 0.005, seed=s),
                      {"edges": nx.number_of_edges, "max_degree": max_degree, "degree_variance": degree_variance}),
        },
        "watts_strogatz_ring": {
            "n": 1000, "k": 6, "beta": 0.0,
            **figures(lambda s: nx.watts_strogatz_graph(1000, 6, 0.0, seed=s),
                      {"edges": nx.number_of_edges, "clustering": nx.average_clustering}),
        },
        "watts_strogatz": {
            "n": 1000, "k": 6, "beta": 0.2,
            **figures(lambda s: nx.watts_strogatz_graph(1000, 6, 0.2, seed=s),
                      {"edges": nx.number_of_edges, "clustering": nx.average_clustering,
                       "degree_variance": degree_variance}),
        },
    }


def main():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "networkx_reference.json")
    text = json.dumps(reference(), indent=2, sort_keys=True) + "\n"
    if sys.argv[1:] == ["--check"]:
        with open(path) as f:
            if f.read() != text:
                sys.exit(f"{path} differs from networkx {nx.__version__}'s figures: run {sys.argv[0]}")
        return
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
