from gradviz.cli import main

main()
