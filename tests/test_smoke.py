import numpy as np

import shiftlearn
from shiftlearn.datasets import load_office_caltech


def test_version():
    assert shiftlearn.__version__


def test_office_caltech_raw_1nn_mean(data_home):
    from sklearn.neighbors import KNeighborsClassifier

    ds = load_office_caltech(data_home)
    accs = []
    for s, t in ds.tasks:
        Xs, ys = ds.get(s)
        Xt, yt = ds.get(t)
        accs.append(np.mean(KNeighborsClassifier(1).fit(Xs, ys).predict(Xt) == yt))
    assert len(accs) == 12
    assert round(100 * np.mean(accs), 2) == 31.37
