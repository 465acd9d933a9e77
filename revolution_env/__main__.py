from revolution_env.frontends.cli import main

raise SystemExit(main())
