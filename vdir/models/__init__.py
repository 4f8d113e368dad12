"""Models compiled by vdir end to end: a builder, weights and a decoding loop per family of models."""
