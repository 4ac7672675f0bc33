"""Corpus-level tools above the pipeline: evaluation on labeled cases, training and
cross-validation of the classifier, the reliability plot."""
