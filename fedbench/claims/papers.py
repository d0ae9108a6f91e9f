"""The papers fedbench checks, as their claim entries cite them (the ``paper`` field)."""

FEDPROX_PAPER = ("FedProx: Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith. Federated Optimization in "
                 "Heterogeneous Networks. MLSys 2020")
FEDLAAVG_PAPER = ("FedLaAvg: Yan, Niu, Ding, Zheng, Wu, Chen, Tang, Jiang. Distributed Non-Convex Optimization "
                  "with Sublinear Speedup under Intermittent Client Availability. arXiv 2002.07399 v1 (2020)")
DELTA_FL_PAPER = ("Delta-FL: Pillutla, Laguel, Malick, Harchaoui. Device Heterogeneity in Federated Learning: "
                  "A Superquantile Approach. arXiv 2002.11223 (2020)")
SCAFFOLD_PAPER = ("SCAFFOLD: Karimireddy, Kale, Mohri, Reddi, Stich, Suresh. SCAFFOLD: Stochastic Controlled "
                  "Averaging for Federated Learning. ICML 2020")
MIME_PAPER = ("Mime: Karimireddy, Jaggi, Kale, Mohri, Reddi, Stich, Suresh. Mime: Mimicking Centralized Stochastic "
              "Algorithms in Federated Learning. 2020")
FEDPROXVR_PAPER = ("FedProxVR: Dinh, Tran, Nguyen, Bao, Zomaya, Zhou. Federated Learning with Proximal Stochastic "
                   "Variance Reduced Gradient Algorithms. ICPP 2020 (talk slides)")
