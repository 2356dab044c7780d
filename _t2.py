import time
from tests.validation.test_balanced_splitting import _workload, DISTRIBUTIONS
from msj_gym import Simulator
from baselines import make_policy
from msj_gym.analysis import helper_probabilities, helper_load
for d in DISTRIBUTIONS:
    wl=_workload(DISTRIBUTIONS[d])
    for p in ("modified-bs","bs","fcfs"):
        t=time.time(); r=Simulator(wl, make_policy(p), seed=2, num_arrivals=120_000).run(); 
        print(d,p,time.time()-t, r.mean_response_time, r.stable, {k:round(v,4) for k,v in r.policy_metrics.items() if 'sent' in k and 'ci' not in k})
    print(helper_probabilities(wl), helper_load(wl))
