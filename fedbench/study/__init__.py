"""The study framework, below the studies (issue 30): how a study is declared (:mod:`fedbench.study.declaration`)
and which studies there are (:mod:`fedbench.study.registry`). The studies themselves (fedbench.studies.<name>) are
content. Imports no torch: a study can be listed, validated and costed without the engine."""
