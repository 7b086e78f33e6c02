from kiosk.cli import main

main()
