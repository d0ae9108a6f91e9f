from fedbench.bench import round_graph


def test_a_rounds_local_steps_trace_to_one_graph_without_a_break():
    got = round_graph.explain("steps", runs=2)
    assert (got["graphs"], got["graph_breaks"], got["reasons"]) == (1, 0, {})
