# mtr: MariaDB's own mysql-test cases (Debian `mariadb-test`) run directly
# against the sandbox's primary and through 6450, compared (tests/mtr/run.sh).
# `make test` runs the quick subset (tests/mtr/quick.txt, mtr_quick.sh) and
# the focused checks of what the suite found (proxy_asdirect.sh); `make mtr`
# runs all of tests/mtr/cases.txt (250 cases) and writes
# $(BUILD)/mtr/mtr-report.txt.
INTEG_TESTS += tests/integration/proxy_asdirect.sh tests/integration/mtr_quick.sh

.PHONY: mtr
mtr: deps all
	@BUILD=$(BUILD) bash tests/mtr/run.sh
