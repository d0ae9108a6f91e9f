"""One module per dataset: ``prepare`` (raw upstream files -> a prepared source) and the papers' variants
(prepared source -> federated dataset). Names, sources and default parameters are in fedbench.data.registry."""
