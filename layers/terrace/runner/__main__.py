import sys

from terrace.runner.main import main

sys.exit(main())
