"""Looking at recordings: a recording's signals as columns (:mod:`hopsim.view.columns`) and plots
of them (:mod:`hopsim.view.plots`)."""
