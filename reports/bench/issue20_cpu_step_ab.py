"""Issue 20, CPU: one local step (the loop kernel's gradient + FedAvg's SGD step, batch 10) per client, before
(autograd through the flat row, glibc's default allocator) and after (per-tensor autograd, freed memory kept),
interleaved in one process; CPU time; FLOP floor at the 512^3 matmul peak measured in the same run."""
import ctypes, json, os, sys, time
import torch
torch.set_num_threads(1)
import fedbench
from fedbench.bench.machine import measure_machine, train_flops_per_sample
from fedbench.bench.federation import bench_model
from fedbench.engine.kernels import KERNELS
from fedbench.ops import sgd_step
libc = ctypes.CDLL("libc.so.6")
def glibc_default():
    libc.mallopt(-4, 65536); libc.mallopt(-1, 128 * 1024); libc.mallopt(-3, 128 * 1024); libc.malloc_trim(0)
def keep():
    libc.mallopt(-4, 0); libc.mallopt(-1, -1)
def old_grad(model):
    def g(theta, x, y, w):
        out = torch.empty_like(theta)
        with torch.enable_grad():
            for k in range(theta.shape[0]):
                keep_ = w[k] > 0
                th = theta[k].detach().requires_grad_(True)
                (out[k],) = torch.autograd.grad(model.weighted_loss(th, x[k][keep_], y[k][keep_], w[k][keep_]), th)
        return out
    return g
glibc_default()
machine = measure_machine(torch.device("cpu"), quick=True)
print("load", os.getloadavg(), "peak GFLOP/s", round(machine.peak_flops / 1e9, 1), flush=True)
rows = []
for name in ("leaf_femnist_cnn", "cifar_cnn"):
    spec = bench_model(name); model = spec.build()
    flops = train_flops_per_sample(model, spec.feature_shape, spec.num_classes, 10, spec.vocabulary)
    new = KERNELS["loop"](model).grad; old = old_grad(model)
    for K in (1, 10):
        theta = model.init(torch.Generator().manual_seed(0)).unsqueeze(0).repeat(K, 1)
        x = torch.randn(K, 10, *spec.feature_shape); y = torch.randint(0, spec.num_classes, (K, 10)); w = torch.full((K, 10), 0.1)
        assert torch.equal(old(theta, x, y, w).view(torch.int32), new(theta, x, y, w).view(torch.int32))
        res = {"before": [], "after": []}
        reps = 7 if name == "cifar_cnn" else 4
        for _ in range(reps):
            for lab, fn, setup in (("before", old, glibc_default), ("after", new, keep)):
                setup(); th = sgd_step(theta, fn(theta, x, y, w), 0.01)  # warm this allocator mode
                n = 20 if name == "cifar_cnn" else 2
                t = time.process_time()
                for _ in range(n):
                    th = sgd_step(th, fn(th, x, y, w), 0.01)
                res[lab].append((time.process_time() - t) / n / K)
        row = {"model": name, "clients": K, "flop_floor_ms": flops * 10 / machine.peak_flops * 1e3}
        for lab, v in res.items():
            med = sorted(v)[len(v) // 2]
            row[lab] = {"ms_per_client_step": round(med * 1e3, 2), "samples_per_s": round(10 / med, 1),
                        "share_of_flop_floor": round(flops * 10 / machine.peak_flops / med, 3)}
        row["after_over_before"] = round(row["after"]["samples_per_s"] / row["before"]["samples_per_s"], 2)
        rows.append(row); print(json.dumps(row), flush=True)
json.dump({"peak_flops": machine.peak_flops, "load_end": os.getloadavg(), "rows": rows}, open(sys.argv[1], "w"), indent=1)
print("load", os.getloadavg())
