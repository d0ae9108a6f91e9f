from fedbench.bench import block_uploads


def test_the_block_constant_is_the_engines():
    from fedbench.engine.simulation import SCHEDULE_BLOCK

    assert block_uploads.SCHEDULE_BLOCK == SCHEDULE_BLOCK


def test_a_block_of_a_static_stack_is_one_upload_and_was_seven_a_round():
    # one run: the cohort (int64 and float32 weights), the static schedule (indices and mask), the signal's index,
    # segments and counts: 7 a round before, all in the block's one transfer now
    assert block_uploads.uploads_per_block(1)["per_block"] == 1
    assert block_uploads.uploads_per_block(1, staged=False)["per_block"] == 7 * block_uploads.SCHEDULE_BLOCK
